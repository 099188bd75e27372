// Tensor storage, views and shape checks.
#include "attn/core/tensor.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "attn/core/memory.hpp"

namespace attn {

namespace {

// Blocks of at least kCacheMin bytes are mapped from the system (mmap) in size classes, kept after
// use, and handed out again for any request of their class. A training step allocates the same
// activation sizes every step; without the cache each large block would come fresh from the
// system and pay a page fault per 4 KiB on first touch, a large share of a step. With
// length-bucketed batches no two steps have quite the same sizes: the classes (8 per
// power of two, so a block is at most 12.5% larger than asked) let a block serve the next step's
// slightly longer or shorter batch. A class never holds more blocks than were once in use at the
// same time (a block is mapped only when none of its class is cached). Tensors in use and cached
// blocks together stay within kCacheSlack times the peak of tensor bytes in use so far (or the
// cache within kCacheFloor); beyond that the blocks returned longest ago are unmapped, and the
// memory goes back to the system at once (from malloc, freed blocks of these sizes stayed in its
// heap). The slack is there because a step's phases use different classes: the blocks of every
// class at its own busiest moment add up to more than the step's peak. Held to the peak alone,
// the captioner unmapped and mapped again blocks every step and paid their page faults anew.
// With one class per exact size and a 2 GiB cap, Multi30k training filled the cache with blocks
// no later step could use (issue 17). Measured: bench/README.md, "The block cache under Tensor".
// Small blocks go to malloc, which caches them itself.
constexpr size_t kCacheMin = size_t{1} << 16;
constexpr size_t kCacheFloor = size_t{64} << 20;
constexpr size_t kCacheSlack = 2;

// The size class of a large request: bytes in (top/2, top], top a power of two, rounded up to a
// multiple of top/16 (8 classes in that range; whole pages).
size_t class_size(size_t bytes) {
  if (bytes > (SIZE_MAX >> 2)) return bytes;   // far past any budget: refused right after, unrounded
  const size_t step = std::max<size_t>(std::bit_ceil(bytes) / 16, 4096);
  return (bytes + step - 1) / step * step;
}

class BlockCache {
 public:
  // The bytes a block for `bytes` really takes (what the memory budget counts).
  static size_t block_bytes(size_t bytes) { return bytes >= kCacheMin ? class_size(bytes) : bytes; }

  // A block for `bytes` (block_bytes of the request); `zeroed` when it is fresh from mmap, whose
  // pages read as zero until written: filling them would only fault every page in for nothing.
  struct Taken {
    void* ptr;
    bool zeroed;
  };
  Taken take(size_t bytes) {
    if (bytes < kCacheMin) {
      void* p = std::aligned_alloc(64, bytes);
      if (!p) throw std::bad_alloc();
      return {p, false};
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        const auto block = it->second.back();   // the most recently returned: warmest in cache
        it->second.pop_back();
        void* p = block->ptr;
        order_.erase(block);
        cached_ -= bytes;
        return {p, false};
      }
    }
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return {p, true};
  }

  size_t cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }

  void give(void* p, size_t bytes) {
    if (bytes < kCacheMin) {
      std::free(p);
      return;
    }
    std::vector<Block> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      order_.push_back({p, bytes});
      free_[bytes].push_back(std::prev(order_.end()));
      cached_ += bytes;
      const size_t in_use = memory_in_use(), peak = memory_peak();
      const size_t limit = kCacheSlack * peak;
      const size_t cap = std::max(kCacheFloor, limit > in_use ? limit - in_use : 0);
      while (cached_ > cap) {   // the oldest block is also the oldest of its class: its front
        const Block oldest = order_.front();
        free_[oldest.bytes].pop_front();
        order_.pop_front();
        cached_ -= oldest.bytes;
        evicted.push_back(oldest);
      }
    }
    for (const Block& b : evicted) ::munmap(b.ptr, b.bytes);   // outside the lock
  }

 private:
  struct Block {
    void* ptr;
    size_t bytes;
  };
  std::mutex mutex_;
  std::list<Block> order_;   // cached blocks, the longest ago returned first
  std::unordered_map<size_t, std::deque<std::list<Block>::iterator>> free_;   // by class, oldest first
  size_t cached_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;   // never destroyed: tensors may outlive statics
  return *cache;
}

}  // namespace

size_t memory_cached() { return block_cache().cached(); }

// 64-byte aligned storage so that BLAS and vectorised loops get aligned rows; zero-filled
// unless made for Tensor::uninitialized.
// Counted against the memory budget (attn/core/memory.hpp) before it is allocated.
struct Tensor::Storage {
  void* ptr = nullptr;
  size_t bytes = 0;
  Storage(size_t size, bool zero_fill, const Shape& shape, DType dtype)
      : bytes(BlockCache::block_bytes(std::max<size_t>(64, (size + 63) / 64 * 64))) {
    if (!try_reserve_memory(bytes))
      throw_out_of_memory(size, std::string(dtype == DType::f32 ? "a " : "an ") + dtype_name(dtype) + " tensor " +
                                       to_string(shape));
    BlockCache::Taken block{};
    try {
      block = block_cache().take(bytes);
    } catch (...) {
      release_memory(bytes);
      throw;
    }
    ptr = block.ptr;
    if (zero_fill && !block.zeroed) std::memset(ptr, 0, bytes);
  }
  ~Storage() {
    release_memory(bytes);
    block_cache().give(ptr, bytes);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

const char* dtype_name(DType dtype) { return dtype == DType::f32 ? "float32" : "int32"; }

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i] == kAny ? std::string("*") : std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool shape_matches(const Shape& found, const Shape& want) {
  if (found.size() != want.size()) return false;
  for (size_t i = 0; i < found.size(); ++i)
    if (want[i] != kAny && want[i] != found[i]) return false;
  return true;
}

void check_shape(const Shape& found, const Shape& want, const std::string& label) {
  if (!shape_matches(found, want))
    throw ShapeError(label + " has shape " + to_string(found) + ", expected " + to_string(want));
}

void check_tensor(const Tensor& t, const Shape& want, const std::string& label, DType dtype) {
  if (t.dtype() != dtype)
    throw ShapeError(label + " has dtype " + dtype_name(t.dtype()) + ", expected " + dtype_name(dtype));
  check_shape(t.shape(), want, label);
}

Tensor::Tensor(Shape shape, DType dtype) : Tensor(std::move(shape), dtype, /*zero_fill=*/true) {}

Tensor::Tensor(Shape shape, DType dtype, bool zero_fill) : shape_(std::move(shape)), dtype_(dtype) {
  for (int64_t d : shape_)
    if (d < 0) throw ShapeError("cannot make a tensor of shape " + to_string(shape_));
  // The bytes, saturated: a shape whose size overflows is refused by the budget, not wrapped.
  size_t bytes = 4;
  for (int64_t d : shape_)
    if (__builtin_mul_overflow(bytes, static_cast<size_t>(d), &bytes) || bytes > SIZE_MAX / 4) bytes = SIZE_MAX / 4;
  storage_ = std::make_shared<Storage>(bytes, zero_fill, shape_, dtype_);
  numel_ = attn::numel(shape_);
}

Tensor Tensor::uninitialized(Shape shape, DType dtype) { return Tensor(std::move(shape), dtype, /*zero_fill=*/false); }

Tensor Tensor::full(Shape shape, float value) {
  Tensor t = uninitialized(std::move(shape));
  t.fill(value);
  return t;
}

Tensor Tensor::from(Shape shape, std::vector<float> values) {
  Tensor t = uninitialized(std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw ShapeError("Tensor::from: " + std::to_string(values.size()) + " values for shape " +
                     to_string(t.shape()));
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

Tensor Tensor::from_ints(Shape shape, std::vector<int32_t> values) {
  Tensor t = uninitialized(std::move(shape), DType::i32);
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw ShapeError("Tensor::from_ints: " + std::to_string(values.size()) + " values for shape " +
                     to_string(t.shape()));
  std::copy(values.begin(), values.end(), t.idata());
  return t;
}

int64_t Tensor::dim(int axis) const {
  const int r = rank();
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw ShapeError("axis " + std::to_string(axis) + " is out of range for shape " + to_string(shape_));
  return shape_[a];
}

float* Tensor::data() {
  if (dtype_ != DType::f32) throw Error("Tensor::data: tensor is int32, expected float32");
  return storage_ ? static_cast<float*>(storage_->ptr) + offset_ : nullptr;
}
const float* Tensor::data() const { return const_cast<Tensor*>(this)->data(); }
int32_t* Tensor::idata() {
  if (dtype_ != DType::i32) throw Error("Tensor::idata: tensor is float32, expected int32");
  return storage_ ? static_cast<int32_t*>(storage_->ptr) + offset_ : nullptr;
}
const int32_t* Tensor::idata() const { return const_cast<Tensor*>(this)->idata(); }
void* Tensor::raw() { return storage_ ? static_cast<char*>(storage_->ptr) + offset_ * 4 : nullptr; }
const void* Tensor::raw() const { return const_cast<Tensor*>(this)->raw(); }

Tensor Tensor::operator[](int64_t i) const {
  if (rank() == 0 || i < 0 || i >= shape_[0])
    throw ShapeError("index " + std::to_string(i) + " is out of range for shape " + to_string(shape_));
  Tensor v = rows(i, i + 1);
  v.shape_.erase(v.shape_.begin());
  return v;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  if (rank() == 0 || begin < 0 || end < begin || end > shape_[0])
    throw ShapeError("rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") are out of range for shape " + to_string(shape_));
  Tensor v = *this;
  const int64_t row = shape_[0] ? numel_ / shape_[0] : 0;
  v.offset_ = offset_ + begin * row;
  v.shape_[0] = end - begin;
  v.numel_ = (end - begin) * row;
  return v;
}

Tensor Tensor::reshape(Shape shape) const {
  int64_t known = 1, wild = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == kAny) {
      if (wild >= 0) throw ShapeError("reshape: more than one inferred dimension in " + to_string(shape));
      wild = static_cast<int64_t>(i);
    } else {
      known *= shape[i];
    }
  }
  if (wild >= 0 && known > 0 && numel_ % known == 0) shape[wild] = numel_ / known;
  if (attn::numel(shape) != numel_)
    throw ShapeError("cannot reshape " + to_string(shape_) + " to " + to_string(shape));
  Tensor v = *this;
  v.shape_ = std::move(shape);
  return v;
}

Tensor Tensor::clone() const {
  Tensor t = uninitialized(shape_, dtype_);
  if (numel_) std::memcpy(t.storage_->ptr, static_cast<const char*>(storage_->ptr) + offset_ * 4, numel_ * 4);
  return t;
}

void Tensor::fill(float value) {
  float* p = data();
  std::fill(p, p + numel_, value);
}

void Tensor::zero() {
  if (numel_) std::memset(static_cast<char*>(storage_->ptr) + offset_ * 4, 0, numel_ * 4);
}

void Tensor::copy_from(const Tensor& other) {
  if (other.numel_ != numel_ || other.dtype_ != dtype_)
    throw ShapeError("copy_from: source " + to_string(other.shape_) + " " + dtype_name(other.dtype_) +
                     " does not fit destination " + to_string(shape_) + " " + dtype_name(dtype_));
  if (numel_)
    std::memmove(static_cast<char*>(storage_->ptr) + offset_ * 4,
                 static_cast<const char*>(other.storage_->ptr) + other.offset_ * 4, numel_ * 4);
}

}  // namespace attn

// Tensor storage, views and shape checks.
#include "attn/core/tensor.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

#include "attn/core/memory.hpp"

namespace attn {

namespace {

// Blocks of at least kCacheMin bytes are kept after use, by exact size, and handed out again.
// A training step allocates the same activation sizes every step; without the cache each large
// block would come fresh from mmap and pay a page fault per 4 KiB on first touch (measured: a
// quarter of a Transformer step). Small blocks go straight to malloc, which caches them itself.
// The cache holds at most kCacheMax bytes; beyond that blocks are freed.
constexpr size_t kCacheMin = size_t{1} << 16;
constexpr size_t kCacheMax = size_t{1} << 31;

class BlockCache {
 public:
  void* take(size_t bytes) {
    if (bytes >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= bytes;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void give(void* p, size_t bytes) {
    if (bytes >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + bytes <= kCacheMax) {
        free_[bytes].push_back(p);
        cached_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;   // never destroyed: tensors may outlive statics
  return *cache;
}

}  // namespace

// 64-byte aligned storage so that BLAS and vectorised loops get aligned rows; zero-filled
// unless made for Tensor::uninitialized.
// Counted against the memory budget (attn/core/memory.hpp) before it is allocated.
struct Tensor::Storage {
  void* ptr = nullptr;
  size_t bytes = 0;
  Storage(size_t size, bool zero_fill, const Shape& shape, DType dtype)
      : bytes(std::max<size_t>(64, (size + 63) / 64 * 64)) {
    if (!try_reserve_memory(bytes))
      throw_out_of_memory(bytes, std::string(dtype == DType::f32 ? "a " : "an ") + dtype_name(dtype) + " tensor " +
                                       to_string(shape));
    try {
      ptr = block_cache().take(bytes);
    } catch (...) {
      release_memory(bytes);
      throw;
    }
    if (zero_fill) std::memset(ptr, 0, bytes);
  }
  ~Storage() {
    block_cache().give(ptr, bytes);
    release_memory(bytes);
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

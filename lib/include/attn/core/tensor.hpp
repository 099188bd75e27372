// attn::Tensor: a contiguous, row-major block of float32 or int32 with a shape.
//
// Copying a Tensor is cheap and shares the storage (like a shared pointer); `clone()` makes a
// deep copy. Views (`rows`, `operator[]`, `reshape`) share the storage too: since a tensor is
// always contiguous, a view is a range of whole rows of the leading dimension, or the same
// memory under another shape. Shape mismatches throw ShapeError carrying both shapes.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/error.hpp"

namespace attn {

using Shape = std::vector<int64_t>;
// A wildcard dimension for check_shape: matches any size.
inline constexpr int64_t kAny = -1;

enum class DType : uint8_t { f32, i32 };
const char* dtype_name(DType dtype);

std::string to_string(const Shape& shape);            // "[4, 9, 64]", kAny as "*"
int64_t numel(const Shape& shape);                    // product of dimensions, 1 for []
bool shape_matches(const Shape& found, const Shape& want);   // equal rank, kAny matches all

// Throws ShapeError "<label> has shape [..], expected [..]" when `found` does not match `want`.
void check_shape(const Shape& found, const Shape& want, const std::string& label);

class Tensor {
 public:
  Tensor() = default;                                  // empty: numel 0, shape [0]
  explicit Tensor(Shape shape, DType dtype = DType::f32);   // zero-filled

  static Tensor zeros(Shape shape, DType dtype = DType::f32) { return Tensor(std::move(shape), dtype); }
  // Storage NOT zero-filled: for a buffer its maker overwrites in full before anything reads it
  // (a GEMM result with beta = 0, an im2col matrix, an elementwise output). Skips a memset pass
  // over memory about to be written anyway, which on large blocks costs as much as a cheap op.
  // Reading an element before writing it gives garbage: when in doubt, use the constructor.
  static Tensor uninitialized(Shape shape, DType dtype = DType::f32);
  static Tensor full(Shape shape, float value);
  static Tensor from(Shape shape, std::vector<float> values);     // values.size() == numel
  static Tensor from_ints(Shape shape, std::vector<int32_t> values);

  const Shape& shape() const { return shape_; }
  int64_t dim(int axis) const;                         // negative axis counts from the end
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  bool empty() const { return numel_ == 0; }
  bool defined() const { return static_cast<bool>(storage_); }

  // Raw element access; the dtype must match (checked, throws Error).
  float* data();
  const float* data() const;
  int32_t* idata();
  const int32_t* idata() const;
  std::span<float> values() { return {data(), static_cast<size_t>(numel_)}; }
  std::span<const float> values() const { return {data(), static_cast<size_t>(numel_)}; }

  // The elements as raw memory whatever the dtype (each is 4 bytes), for copying and hashing.
  void* raw();
  const void* raw() const;
  size_t byte_size() const { return static_cast<size_t>(numel_) * 4; }

  // Element i of the flattened tensor (float only), for tests and small code paths.
  float& at(int64_t i) { return data()[i]; }
  float at(int64_t i) const { return data()[i]; }

  // Views sharing storage.
  Tensor operator[](int64_t i) const;                  // index the leading dimension
  Tensor rows(int64_t begin, int64_t end) const;       // [begin, end) of the leading dimension
  Tensor reshape(Shape shape) const;                   // one dimension may be kAny (inferred)

  Tensor clone() const;                                // deep copy
  void fill(float value);
  void zero();
  void copy_from(const Tensor& other);                 // same numel and dtype; shapes may differ

  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }
  // The very same elements under the same shape (e.g. self-attention's query, key and value).
  bool is_same(const Tensor& other) const {
    return storage_ == other.storage_ && offset_ == other.offset_ && shape_ == other.shape_ &&
           dtype_ == other.dtype_;
  }

 private:
  struct Storage;
  Tensor(Shape shape, DType dtype, bool zero_fill);   // checks the shape, then allocates
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;          // in elements
  int64_t numel_ = 0;
  Shape shape_{0};
  DType dtype_ = DType::f32;
};

inline Tensor zeros_like(const Tensor& t) { return Tensor(t.shape(), t.dtype()); }

// Tensors by name, in order: what a run or a decoder returns beside its main result (attention
// weights, weightings), each written as a dataset of that name.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Checks a tensor's shape and dtype (float32 by default), naming it in the message.
void check_tensor(const Tensor& t, const Shape& want, const std::string& label, DType dtype = DType::f32);

}  // namespace attn

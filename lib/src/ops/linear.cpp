// y = x W^T + b as one GEMM over all rows of x. The bias is written into y first and the GEMM
// adds onto it (beta = 1), so the bias costs one pass of row copies and no extra sweep. The
// raw-row entry points (linear_rows_*) add it after the product instead, since their y may
// already hold other parts of the sum (beta = 1, one call per column block of W).
#include "attn/ops/linear.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "attn/blas/blas.hpp"
#include "strided_loop.hpp"

namespace attn::ops {
namespace {

using blas::Trans;

Shape with_last(Shape s, int64_t last) {
  s.back() = last;
  return s;
}

void check_input(const Tensor& x, const char* label) {
  check_tensor(x, x.shape(), label);
  if (x.rank() < 1)
    throw ShapeError(std::string(label) + " has shape " + to_string(x.shape()) +
                     ", expected at least 1 dimension");
}

// The number of rows once x: [..., in] is flattened to [rows, in].
int64_t leading_rows(const Tensor& x) { return numel(Shape(x.shape().begin(), x.shape().end() - 1)); }

// db[j] += sum_i dy[i, j] for dy: [rows, cols] with row stride ld. Threads own blocks of columns
// and sum rows in order, so the result does not depend on the thread count.
void add_column_sums(const float* dy, int64_t rows, int64_t cols, int64_t ld, float* db) {
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (rows * cols >= detail::kParallelElems && blocks > 1)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t begin = blk * kBlock, n = std::min(kBlock, cols - begin);
    float acc[kBlock] = {};
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = dy + i * ld + begin;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) acc[j] += row[j];
    }
    for (int64_t j = 0; j < n; ++j) db[begin + j] += acc[j];
  }
}

// W [out, in] (or dW, `name`) and its column block [col, col + width): throws ShapeError naming
// the op. Builds no string unless it throws (the raw-row ops run inside time loops).
void check_block(const Tensor& W, int64_t col, int64_t width, const char* op, const char* name) {
  if (W.rank() != 2 || col < 0 || width < 0 || col + width > W.dim(1))
    throw ShapeError(std::string(op) + ": columns [" + std::to_string(col) + ", " + std::to_string(col + width) +
                     ") of " + name + " [out, in] of shape " + to_string(W.shape()) + " (expected a 2-D " + name +
                     " holding them)");
}

}  // namespace

Tensor linear_forward(const Tensor& x, const Tensor& W, const Tensor& b, LinearCache* cache) {
  check_input(x, "linear: x [..., in]");
  const int64_t in = x.dim(-1);
  check_tensor(W, {kAny, in}, "linear: W [out, in]");
  const int64_t out = W.dim(0), rows = leading_rows(x);
  const bool bias = !b.empty();
  if (bias) check_tensor(b, {out}, "linear: b [out]");

  Tensor y = Tensor::uninitialized(with_last(x.shape(), out));   // bias rows or beta = 0
  float* py = y.data();
  if (bias) {
    const float* pb = b.data();
#pragma omp parallel for schedule(static) if (rows * out >= detail::kParallelElems)
    for (int64_t i = 0; i < rows; ++i) std::memcpy(py + i * out, pb, out * sizeof(float));
  }
  blas::gemm(Trans::N, Trans::T, rows, out, in, 1.0f, x.data(), in, W.data(), in,
             bias ? 1.0f : 0.0f, py, out);
  if (cache) cache->x = x;
  return y;
}

Tensor linear_backward(const Tensor& dy, const Tensor& W, const LinearCache& cache,
                       Tensor& dW, Tensor& db) {
  const Tensor& x = cache.x;
  check_input(x, "linear_backward: cached x [..., in]");
  const int64_t in = x.dim(-1);
  check_tensor(W, {kAny, in}, "linear_backward: W [out, in]");
  const int64_t out = W.dim(0);
  check_tensor(dy, with_last(x.shape(), out), "linear_backward: dy [..., out]");
  check_tensor(dW, W.shape(), "linear_backward: dW [out, in]");
  if (!db.empty()) check_tensor(db, {out}, "linear_backward: db [out]");
  const int64_t rows = leading_rows(x);

  Tensor dx = Tensor::uninitialized(x.shape());   // beta = 0
  blas::gemm(Trans::N, Trans::N, rows, in, out, 1.0f, dy.data(), out, W.data(), in, 0.0f,
             dx.data(), in);                                          // dx = dy W
  blas::gemm(Trans::T, Trans::N, out, in, rows, 1.0f, dy.data(), out, x.data(), in, 1.0f,
             dW.data(), in);                                          // dW += dy^T x
  if (!db.empty()) add_column_sums(dy.data(), rows, out, out, db.data());   // db += 1^T dy
  return dx;
}

// ---- on raw rows ------------------------------------------------------------------------------

void linear_rows_forward(const float* x, int64_t ldx, int64_t rows, const Tensor& W, int64_t col, int64_t width,
                         const float* b, float beta, float* y, int64_t ldy) {
  check_block(W, col, width, "linear_rows_forward", "W");
  const int64_t out = W.dim(0), in = W.dim(1);
  const float* Wc = W.data() + col;
  if (rows > 0 && out > 0) {
    if (width == 0) {
      if (beta == 0.0f)
        for (int64_t r = 0; r < rows; ++r) std::fill(y + r * ldy, y + r * ldy + out, 0.0f);
    } else if (rows > 1) {
      blas::gemm(Trans::N, Trans::T, rows, out, width, 1.0f, x, ldx, Wc, in, beta, y, ldy);
    } else {
      if (beta == 0.0f) std::fill(y, y + out, 0.0f);   // never let gemv scale uninitialised memory
      blas::gemv(Trans::N, out, width, 1.0f, Wc, in, x, beta, y);
    }
  }
  if (b == nullptr) return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < out; ++j) y[r * ldy + j] += b[j];
}

void linear_rows_backward_input(const float* dy, int64_t lddy, int64_t rows, const Tensor& W, int64_t col,
                                int64_t width, float beta, float* dx, int64_t lddx) {
  check_block(W, col, width, "linear_rows_backward_input", "W");
  const int64_t out = W.dim(0), in = W.dim(1);
  if (rows == 0 || width == 0) return;
  const float* Wc = W.data() + col;
  if (out == 0) {
    if (beta == 0.0f)
      for (int64_t r = 0; r < rows; ++r) std::fill(dx + r * lddx, dx + r * lddx + width, 0.0f);
  } else if (rows > 1) {
    blas::gemm(Trans::N, Trans::N, rows, width, out, 1.0f, dy, lddy, Wc, in, beta, dx, lddx);
  } else {
    if (beta == 0.0f) std::fill(dx, dx + width, 0.0f);
    blas::gemv(Trans::T, out, width, 1.0f, Wc, in, dy, beta, dx);
  }
}

void linear_rows_backward_params(const float* dy, int64_t lddy, int64_t rows, const float* x, int64_t ldx, int64_t col,
                                 int64_t width, Tensor& dW, float* db) {
  check_block(dW, col, width, "linear_rows_backward_params", "dW");
  const int64_t out = dW.dim(0), in = dW.dim(1);
  if (rows > 0 && width > 0 && out > 0)
    blas::gemm(Trans::T, Trans::N, out, width, rows, 1.0f, dy, lddy, x, ldx, 1.0f, dW.data() + col, in);
  if (db != nullptr) add_column_sums(dy, rows, out, lddy, db);
}

}  // namespace attn::ops

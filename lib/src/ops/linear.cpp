// y = x W^T + b as one GEMM over all rows of x. The bias is written into y first and the GEMM
// adds onto it (beta = 1), so the bias costs one pass of row copies and no extra sweep.
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

// db[j] += sum_i dy[i, j] for dy: [rows, cols]. Threads own blocks of columns and sum rows
// in order, so the result does not depend on the thread count.
void add_column_sums(const float* dy, int64_t rows, int64_t cols, float* db) {
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (rows * cols >= detail::kParallelElems && blocks > 1)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t begin = blk * kBlock, n = std::min(kBlock, cols - begin);
    float acc[kBlock] = {};
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = dy + i * cols + begin;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) acc[j] += row[j];
    }
    for (int64_t j = 0; j < n; ++j) db[begin + j] += acc[j];
  }
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
  if (!db.empty()) add_column_sums(dy.data(), rows, out, db.data());  // db += 1^T dy
  return dx;
}

}  // namespace attn::ops

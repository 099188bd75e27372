// The affine map of a fully connected layer, y = x W^T + b, applied to the last dimension of
// x whatever its leading dimensions ([B, in], [B, T, in], ...): they are flattened into rows
// so the forward and each gradient is ONE GEMM. W is stored [out, in] as in PyTorch's
// nn.Linear, so a checkpoint's weights read the same in both.
#pragma once
#include "attn/core/tensor.hpp"

namespace attn::ops {

// y = x W^T + b.   x: [..., in]   W: [out, in]   b: [out] or empty (no bias)   ->   y: [..., out]
struct LinearCache { Tensor x; };   // exactly what backward needs; pass nullptr for inference
Tensor linear_forward(const Tensor& x, const Tensor& W, const Tensor& b, LinearCache* cache);

// dy: [..., out]. Adds into dW [out, in] (dW += dy^T x, one GEMM over all rows) and into
// db [out] (db += sum of dy's rows) unless db is empty (a layer without bias).
// Returns dx = dy W: [..., in], a new tensor.
Tensor linear_backward(const Tensor& dy, const Tensor& W, const LinearCache& cache,
                       Tensor& dW, Tensor& db);

// ---- On raw rows, for step loops ----
// The same map on rows inside a caller's buffers, for a recurrence that keeps a whole sequence
// in time-major blocks and runs one step of a block of rows at a time (the NTM's controller,
// heads and output layer): a step's product is formed inside the loop, the weight gradients
// once over all T*B rows after it. x, y, dy and dx are row-major with the given row strides.
// The input may be a column block W[:, col : col + width] of a wider W [out, in], so that an
// input [u; v] whose parts live in different buffers (or are known at different times) needs no
// concatenation: x W^T = u W[:, :|u|]^T + v W[:, |u|:]^T, one call per part.
// Nothing is allocated and no thread team is opened: inside a parallel region every product runs
// on the calling thread (the BLAS seam's rule). One row is a gemv rather than a gemm: OpenBLAS
// packs both operands of every gemm, which for a single row costs more than the product.
// A W or dW that is not 2-D or does not hold the column block throws ShapeError.

// y[rows, out] = beta y + x W[:, col : col + width]^T, then + b (added after the product) when b
// is not null. x: [rows, width] (row stride ldx)   W: [out, in]   b: [out]   y: row stride ldy.
// beta = 0 overwrites y without reading it; width = 0 leaves beta y (+ b).
void linear_rows_forward(const float* x, int64_t ldx, int64_t rows, const Tensor& W, int64_t col, int64_t width,
                         const float* b, float beta, float* y, int64_t ldy);

// The gradient of x: dx[rows, width] = beta dx + dy W[:, col : col + width].
// dy: [rows, out] (row stride lddy)   dx: row stride lddx; beta = 0 overwrites dx.
void linear_rows_backward_input(const float* dy, int64_t lddy, int64_t rows, const Tensor& W, int64_t col,
                                int64_t width, float beta, float* dx, int64_t lddx);

// The parameters' gradients over all rows, ADDED: dW[:, col : col + width] += dy^T x (one GEMM)
// and, when db is not null, db [out] += the column sums of dy (linear_backward's, so the same
// bits at any thread count).
void linear_rows_backward_params(const float* dy, int64_t lddy, int64_t rows, const float* x, int64_t ldx, int64_t col,
                                 int64_t width, Tensor& dW, float* db);

}  // namespace attn::ops

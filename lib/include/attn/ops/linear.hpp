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

}  // namespace attn::ops

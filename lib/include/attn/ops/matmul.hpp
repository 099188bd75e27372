// Matrix products of tensors: y = op(a) op(b), where op transposes the last two dimensions
// when asked. Plain 2-D products, batched products over any leading dimensions, and a 2-D
// operand shared by the whole batch (the common x[B, T, D] @ W case, realised as ONE GEMM
// over B*T rows). Every product, forward and backward, goes through the blas seam. M, N, K
// below are BLAS's product sizes, not docs/ARCHITECTURE.md's dimension letters.
#pragma once
#include "attn/core/tensor.hpp"

namespace attn::ops {

struct MatmulOptions {
  bool transpose_a = false;   // use a^T: a holds [..., K, M]
  bool transpose_b = false;   // use b^T: b holds [..., N, K]
};

// y = op(a) op(b).
//   a: [..., M, K]   b: [..., K, N]   ->   y: [..., M, N]   (the leading "..." equal), or
//   a: [..., M, K]   b: [K, N]        ->   y: [..., M, N]   (b shared by every batch item), or
//   a: [M, K]        b: [..., K, N]   ->   y: [..., M, N]   (a shared by every batch item),
// with a stored as [..., K, M] when transpose_a and b as [..., N, K] when transpose_b.
// A shared b without transpose_a is one GEMM over all rows of a; otherwise one strided
// batched GEMM.   e.g. scores = matmul_forward(q, k, {.transpose_b = true}, &cache)
struct MatmulCache {
  Tensor a, b;   // the inputs (shared, not copied): do not modify them in place
  MatmulOptions options;
};
Tensor matmul_forward(const Tensor& a, const Tensor& b, const MatmulOptions& options,
                      MatmulCache* cache);

// dy: [..., M, N]. Returns new da (a's shape) and db (b's shape):
//   d op(a) = dy op(b)^T,   d op(b) = op(a)^T dy,
// summed over the batch for a shared 2-D operand.
struct MatmulGrads { Tensor da, db; };
MatmulGrads matmul_backward(const Tensor& dy, const MatmulCache& cache);

}  // namespace attn::ops

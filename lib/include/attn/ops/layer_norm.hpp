// Layer normalisation over the last dimension (Ba, Kiros & Hinton 2016, "Layer
// Normalization", eq. 4), the normaliser of every Transformer sub-layer.
//
// The forward caches each row's mean and 1/sqrt(var + eps) (two floats per row) and shares the
// input rather than copying it; the backward recomputes x_hat from them. Parameter gradients
// are summed over rows in fixed blocks and then in block order, so they are the same for any
// thread count.
#pragma once
#include "attn/core/tensor.hpp"

namespace attn::ops {

struct LayerNormCache {
  Tensor x;      // [..., D] the input, shared with the caller (not copied): leave it unchanged
  Tensor mean;   // [rows] per-row mean, rows = numel / D
  Tensor rstd;   // [rows] per-row 1 / sqrt(var + eps), var the biased (1/D) variance
};

// y = gamma * (x - mean) / sqrt(var + eps) + beta, mean and var over the last dimension.
// x: [..., D]   gamma, beta: [D]   ->   y: [..., D], a new tensor. eps >= 0 (ConfigError).
Tensor layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                          LayerNormCache* cache);

// With x_hat = (x - mean) rstd and g = dy * gamma, per row:
//   dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)).
// dy: [..., D]. Adds sum_rows dy * x_hat into dgamma and sum_rows dy into dbeta ([D] each).
// Returns dx: [..., D], a new tensor.
Tensor layer_norm_backward(const Tensor& dy, const Tensor& gamma, const LayerNormCache& cache,
                           Tensor& dgamma, Tensor& dbeta);

}  // namespace attn::ops

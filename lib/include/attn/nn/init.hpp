// Parameter initialisers. Weight matrices are stored [out, in] (y = x W^T), so fan_in is the
// last dimension and fan_out the product of the others.
#pragma once
#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"

namespace attn::nn {

// Glorot & Bengio 2010 uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).
Tensor glorot_uniform(const Shape& shape, Rng& rng, float gain = 1.0f);

// N(0, stddev^2), e.g. embeddings with stddev = d_model^-0.5 (Vaswani et al. 2017).
Tensor normal_init(const Shape& shape, Rng& rng, float stddev);

}  // namespace attn::nn

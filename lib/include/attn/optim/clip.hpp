// Gradient clipping over a whole ParamList: by global L2 norm (Pascanu et al. 2013, "On the
// difficulty of training recurrent neural networks", algorithm 1) and by value.
//
// The norm is summed in double over fixed blocks of each gradient and the blocks are added in
// a fixed order, so it is the same to the last bit whatever the thread count.
#pragma once
#include "attn/nn/param.hpp"

namespace attn::optim {

// sqrt(sum over params and elements of grad^2), in double.
double grad_norm(const ParamList& params);

// If the global norm ||g|| exceeds max_norm, scales every grad in place by max_norm / ||g||, so
// the new norm is max_norm; otherwise leaves them alone. Returns the norm before clipping.
// A non-finite norm (a NaN or Inf gradient) is returned with the grads untouched, so the caller
// can skip the step. max_norm must be > 0 (ConfigError).
double clip_grad_norm(const ParamList& params, double max_norm);

// Clamps every grad element to [-limit, limit] in place (NaN stays NaN). limit > 0 (ConfigError).
void clip_grad_value(const ParamList& params, float limit);

}  // namespace attn::optim

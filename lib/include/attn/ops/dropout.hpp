// Inverted dropout (Srivastava et al. 2014, "Dropout", sec. 10; the 1/(1-p) scaling at
// training time, so inference is the identity).
//
// The mask is drawn from attn::Rng counter-based: element i keeps iff the uniform at stream
// position counter + i is >= p, so the mask is a function of (seed, counter) alone, the same
// for any thread count, and the rng advances by numel(x). Resuming from a checkpointed
// RngState reproduces the masks bit for bit.
#pragma once
#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"

namespace attn::ops {

struct DropoutCache {
  Tensor mask;   // [...] 0 or 1/(1-p) per element; undefined when the forward was the identity
};

// y = x * mask, mask_i = [u_i >= p] / (1 - p), u_i uniform in [0, 1).   x: [...] -> y: [...].
// p in [0, 1) (else ConfigError). With p = 0 or training = false it is the identity: returns x
// itself (sharing storage) and draws nothing. Otherwise returns a new tensor.
Tensor dropout_forward(const Tensor& x, float p, bool training, Rng& rng, DropoutCache* cache);

// dx = dy * mask (dy itself, sharing storage, when the forward was the identity).
// dy: [...] -> dx: [...].
Tensor dropout_backward(const Tensor& dy, const DropoutCache& cache);

}  // namespace attn::ops

// The addressing ops of the neural Turing machine (Graves, Wayne & Danihelka 2014, section 3.3)
// that are not plain softmax or interpolation: content similarity, circular shift and
// sharpening. All take and give batches [B, ...]; each counts its multiply-adds with
// flops::add. They are serial loops: NTM memories are small (N x M of a few thousand), so a
// thread team would cost more than the arithmetic.
//
// An NTM head composes them as (eq. 5-9):
//   w_c = softmax(β K(k, mem))          content addressing (K: cosine_similarity_forward)
//   w_g = g w_c + (1 - g) w_prev        interpolation
//   w~  = circular_conv(w_g, s)         location shift
//   w   = sharpen(w~, γ)
#pragma once
#include "attn/core/tensor.hpp"

namespace attn::ops {

// ---- cosine similarity, eq. (6) ----------------------------------------------------------------

// Added to the product of norms: K = 0, not NaN, for a zero key or a zero memory row. Same value
// as PyTorch's F.cosine_similarity. (Near a zero row the gradient is then about k / eps: keep
// memory initialised away from zero, as NTM implementations do.)
inline constexpr float kCosineEps = 1e-8f;

struct CosineSimilarityCache {
  Tensor k;          // [B, M] (shared)
  Tensor mem;        // [B, N, M] (shared)
  Tensor sim;        // [B, N] the output K
  Tensor k_norm;     // [B] ||k_b||
  Tensor mem_norm;   // [B, N] ||mem[b, i]||
  float eps = kCosineEps;
};

// K[b, i] = k_b · mem[b, i] / (||k_b|| ||mem[b, i]|| + eps).
//   k: [B, M]   mem: [B, N, M]   -> K: [B, N]
Tensor cosine_similarity_forward(const Tensor& k, const Tensor& mem, CosineSimilarityCache* cache,
                                 float eps = kCosineEps);

struct CosineSimilarityGrads {
  Tensor dk;     // [B, M]
  Tensor dmem;   // [B, N, M]
};
// dK: [B, N]. Both gradients are fresh (memory is a state, not a parameter).
CosineSimilarityGrads cosine_similarity_backward(const Tensor& dK,
                                                 const CosineSimilarityCache& cache);

// ---- circular convolution (location shift), eq. (8) -------------------------------------------

struct CircularConvCache {
  Tensor w;   // [B, N] (shared)
  Tensor s;   // [B, S] (shared)
};

// y[b, i] = Σ_j w[b, (i - j) mod N] s[b, j], for the S shifts j = -(S-1)/2 ... (S-1)/2 stored in
// order (s[b, 0] is the shift by -(S-1)/2, s[b, (S-1)/2] no shift). S odd; S may exceed N
// (shifts then wrap around).   w: [B, N]   s: [B, S]   -> y: [B, N]
Tensor circular_conv_forward(const Tensor& w, const Tensor& s, CircularConvCache* cache);

struct CircularConvGrads {
  Tensor dw;   // [B, N]
  Tensor ds;   // [B, S]
};
// dy: [B, N]. Both gradients are fresh.
CircularConvGrads circular_conv_backward(const Tensor& dy, const CircularConvCache& cache);

// ---- sharpening, eq. (9) ----------------------------------------------------------------------

struct SharpenCache {
  Tensor w;       // [B, N] (shared)
  Tensor gamma;   // [B] (shared)
  Tensor y;       // [B, N] the output
  Tensor w_max;   // [B] max_i w[b, i]
  Tensor total;   // [B] Σ_i (w[b, i] / w_max[b])^γ
};

// y[b, i] = w[b, i]^γ_b / Σ_j w[b, j]^γ_b, computed as (w / max w)^γ, which cannot underflow to
// 0/0 however large γ is. w >= 0 with a positive entry in every row and γ >= 1 (the controller
// emits γ = 1 + softplus), else DataError.   w: [B, N]   gamma: [B]   -> y: [B, N]
Tensor sharpen_forward(const Tensor& w, const Tensor& gamma, SharpenCache* cache);

struct SharpenGrads {
  Tensor dw;       // [B, N]
  Tensor dgamma;   // [B]
};
// dy: [B, N]. Both gradients are fresh.
//   dw_k = γ (dy_k - Σ_i dy_i y_i) w_k^(γ-1) / Σ_j w_j^γ
//   dγ   = Σ_i dy_i y_i (ln w_i - Σ_j y_j ln w_j)      (terms with w_i = 0 are 0)
SharpenGrads sharpen_backward(const Tensor& dy, const SharpenCache& cache);

}  // namespace attn::ops

// The addressing ops of the neural Turing machine (Graves, Wayne & Danihelka 2014, section 3.3)
// that are not plain softmax or interpolation: content similarity, circular shift and
// sharpening. All take and give batches [B, ...]; each counts its multiply-adds with
// flops::add. They are serial loops: NTM memories are small (Nm x M of a few thousand; Graves'
// N x M), so a thread team would cost more than the arithmetic.
//
// An NTM head composes them as (eq. 5-9):
//   w_c = softmax(β K(k, mem))          content addressing (K: cosine_similarity_forward)
//   w_g = g w_c + (1 - g) w_prev        interpolation
//   w~  = circular_conv(w_g, s)         location shift
//   w   = sharpen(w~, γ)
// `head_address_*` at the end of this file is that whole chain fused, for a model's time loop.
#pragma once
#include <cstdint>

#include "attn/core/tensor.hpp"

namespace attn::ops {

// ---- cosine similarity, eq. (6) ----------------------------------------------------------------

// Added to the product of norms: K = 0, not NaN, for a zero key or a zero memory row. Same value
// as PyTorch's F.cosine_similarity. (Near a zero row the gradient is then about k / eps: keep
// memory initialised away from zero, as NTM implementations do.)
inline constexpr float kCosineEps = 1e-8f;

struct CosineSimilarityCache {
  Tensor k;          // [B, M] (shared)
  Tensor mem;        // [B, Nm, M] (shared)
  Tensor sim;        // [B, Nm] the output K
  Tensor k_norm;     // [B] ||k_b||
  Tensor mem_norm;   // [B, Nm] ||mem[b, i]||
  float eps = kCosineEps;
};

// K[b, i] = k_b · mem[b, i] / (||k_b|| ||mem[b, i]|| + eps).
//   k: [B, M]   mem: [B, Nm, M]   -> K: [B, Nm]
Tensor cosine_similarity_forward(const Tensor& k, const Tensor& mem, CosineSimilarityCache* cache,
                                 float eps = kCosineEps);

struct CosineSimilarityGrads {
  Tensor dk;     // [B, M]
  Tensor dmem;   // [B, Nm, M]
};
// dK: [B, Nm]. Both gradients are fresh (memory is a state, not a parameter).
CosineSimilarityGrads cosine_similarity_backward(const Tensor& dK,
                                                 const CosineSimilarityCache& cache);

// ---- circular convolution (location shift), eq. (8) -------------------------------------------

struct CircularConvCache {
  Tensor w;   // [B, Nm] (shared)
  Tensor s;   // [B, Ns] (shared)
};

// y[b, i] = Σ_j w[b, (i - j) mod Nm] s[b, j], for the Ns shifts j = -(Ns-1)/2 ... (Ns-1)/2 stored in
// order (s[b, 0] is the shift by -(Ns-1)/2, s[b, (Ns-1)/2] no shift). Ns odd; Ns may exceed Nm
// (shifts then wrap around).   w: [B, Nm]   s: [B, Ns]   -> y: [B, Nm]
Tensor circular_conv_forward(const Tensor& w, const Tensor& s, CircularConvCache* cache);

struct CircularConvGrads {
  Tensor dw;   // [B, Nm]
  Tensor ds;   // [B, Ns]
};
// dy: [B, Nm]. Both gradients are fresh.
CircularConvGrads circular_conv_backward(const Tensor& dy, const CircularConvCache& cache);

// ---- sharpening, eq. (9) ----------------------------------------------------------------------

struct SharpenCache {
  Tensor w;       // [B, Nm] (shared)
  Tensor gamma;   // [B] (shared)
  Tensor y;       // [B, Nm] the output
  Tensor w_max;   // [B] max_i w[b, i]
  Tensor total;   // [B] Σ_i (w[b, i] / w_max[b])^γ
};

// y[b, i] = w[b, i]^γ_b / Σ_j w[b, j]^γ_b, computed as (w / max w)^γ, which cannot underflow to
// 0/0 however large γ is. w >= 0 with a positive entry in every row and γ >= 1 (the controller
// emits γ = 1 + softplus), else DataError.   w: [B, Nm]   gamma: [B]   -> y: [B, Nm]
Tensor sharpen_forward(const Tensor& w, const Tensor& gamma, SharpenCache* cache);

struct SharpenGrads {
  Tensor dw;       // [B, Nm]
  Tensor dgamma;   // [B]
};
// dy: [B, Nm]. Both gradients are fresh.
//   dw_k = γ (dy_k - Σ_i dy_i y_i) w_k^(γ-1) / Σ_j w_j^γ
//   dγ   = Σ_i dy_i y_i (ln w_i - Σ_j y_j ln w_j)      (terms with w_i = 0 are 0)
SharpenGrads sharpen_backward(const Tensor& dy, const SharpenCache& cache);

// ---- one head's whole addressing, fused (eq. 5-9) ------------------------------------------
//
// The chain above plus the softmax and the interpolation, for one head and one batch row on raw
// rows, allocating nothing: w = sharpen(circular_conv(g softmax(β K(k, mem)) + (1 - g) w_prev,
// s), γ). An NTM addresses every head at every time step, and at batch 1 four batched ops per
// head would spend more on tensors and dispatch than on arithmetic; families/ntm calls the row
// functions from its own loop over batch rows (one thread per row, so no reduction is shared).
// `head_address_forward/backward` run them over a batch [B, ...]; they check their inputs, count
// their multiply-adds, and their test checks the fusion against the four ops above. The row
// functions count nothing (their caller does, once per step).
//
// Preconditions of the row functions (the batched op checks them; the NTM's activations give
// them by construction): β finite and >= 0, g in [0, 1], s >= 0 with a positive entry, γ finite
// and >= 1, w_prev >= 0; then w~ sums to what w_prev and s sum to and sharpening is defined.
// Sharpening keeps l = ln(w~ / max w~) from the forward, so it cannot underflow (as
// sharpen_forward) and its backward needs no pow: w^(γ-1) / Σ w^γ = exp((γ-1) l) / (max Σ).

struct HeadAddressDims {
  int64_t N = 0;   // Nm, memory rows
  int64_t M = 0;   // M, memory row width
  int64_t S = 0;   // Ns, shifts, odd: -(Ns-1)/2 ... (Ns-1)/2 (circular_conv_forward's order)
};

// One head's inputs for one batch row. The row functions read them again in the backward.
struct HeadAddressRow {
  const float* k = nullptr;          // [M] key
  float beta = 0.0f;                 // key strength β
  float g = 0.0f;                    // interpolation gate
  const float* s = nullptr;          // [Ns] shift weights
  float gamma = 1.0f;                // sharpening exponent γ
  const float* w_prev = nullptr;     // [Nm] the head's previous weighting
  const float* mem = nullptr;        // [Nm, M] the memory (row stride M)
  const float* mem_norm = nullptr;   // [Nm] ||mem[i]||, from memory_row_norms
};

// Floats a row's forward saves for its backward: K, w_c, w_g and ln(w~ / max w~) ([Nm] each),
// then ||k||, max w~ and Σ (w~ / max w~)^γ.
inline int64_t head_address_saved_size(int64_t N) { return 4 * N + 3; }
// Floats of scratch a row's backward needs.
inline int64_t head_address_scratch_size(int64_t N) { return 2 * N; }

// norms[i] = ||mem[i]|| for the Nm rows of mem [Nm, M]; every head that addresses one memory
// shares them.
void memory_row_norms(const float* mem, int64_t N, int64_t M, float* norms);

// Writes w [Nm] and saved [head_address_saved_size(Nm)].
void head_address_row_forward(const HeadAddressDims& d, const HeadAddressRow& in, float* w, float* saved);

struct HeadAddressRowGrads {
  float* dk = nullptr;        // [M] overwritten
  float* ds = nullptr;        // [Ns] overwritten
  float dbeta = 0.0f;         // written
  float dg = 0.0f;            // written
  float dgamma = 0.0f;        // written
  float* dw_prev = nullptr;   // [Nm] ADDED into; null when not wanted
  float* dmem = nullptr;      // [Nm, M] ADDED into; null when not wanted
};

// dw: [Nm] the gradient w.r.t. the row's output w (what the forward wrote); in, w and saved
// as the forward had them. scratch: [head_address_scratch_size(Nm)].
void head_address_row_backward(const HeadAddressDims& d, const HeadAddressRow& in, const float* w,
                               const float* saved, const float* dw, float* scratch, HeadAddressRowGrads& grads);

struct HeadAddressCache {
  Tensor k, beta, g, s, gamma, w_prev, mem;   // the inputs (shared)
  Tensor mem_norm;                            // [B, Nm]
  Tensor w;                                   // [B, Nm] the output
  Tensor saved;                               // [B, head_address_saved_size(Nm)]
};

// The fused chain over a batch.
//   k: [B, M]   beta, g, gamma: [B]   s: [B, Ns]   w_prev: [B, Nm]   mem: [B, Nm, M]   -> w: [B, Nm]
// Inputs outside the preconditions above, or a row whose w~ is all zero (g = 0 with w_prev = 0),
// throw DataError naming the entry; shapes ShapeError.
Tensor head_address_forward(const Tensor& k, const Tensor& beta, const Tensor& g, const Tensor& s,
                            const Tensor& gamma, const Tensor& w_prev, const Tensor& mem,
                            HeadAddressCache* cache);

struct HeadAddressGrads {
  Tensor dk;       // [B, M]
  Tensor dbeta;    // [B]
  Tensor dg;       // [B]
  Tensor ds;       // [B, Ns]
  Tensor dgamma;   // [B]
  Tensor dw_prev;  // [B, Nm]
  Tensor dmem;     // [B, Nm, M]
};
// dw: [B, Nm]. Every gradient is fresh.
HeadAddressGrads head_address_backward(const Tensor& dw, const HeadAddressCache& cache);

}  // namespace attn::ops

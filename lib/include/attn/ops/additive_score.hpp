// The elementwise heart of additive (Bahdanau, "concat") attention scores, for nn::Attention:
// after the two projections (U k once per sequence, W q once per step) each of the B S
// (query, key) pairs costs A tanh and a dot with v, which at A = 64 takes as long as the GEMMs
// around it. Both passes are vectorised kernels cloned for AVX2 (lib/src/ops/vector_clones.hpp),
// one task per batch row. In the captioner's step (B S A = 32 x 320 x 64 per word) they had run
// 4 floats a vector inside nn::Attention, at a much larger share of the step
// (experiments/perf/caption, "Winograd, a vectorised attention, and OpenBLAS's own kernels").
#pragma once
#include <cstdint>

namespace attn::ops {

// hidden[b, s, :] = tanh(uk[b, s, :] + wq[b, :]) and e[b, s] = hidden[b, s, :] . v, for
// uk, hidden [B, S, A], wq [B, A], v [A], e [B, S]. tanh is tanh_fast (ops/activation.hpp).
void additive_scores(const float* uk, const float* wq, const float* v, int64_t B, int64_t S, int64_t A,
                     float* hidden, float* e);

// The backward of additive_scores from de [B, S]: with dpre = de v (1 - hidden^2), ADDS dpre
// into duk [B, S, A], WRITES dwq[b, :] = sum_s dpre[b, s, :], and ADDS v's gradient hidden^T de
// into dv [A] (in the same pass over hidden, the batch rows' parts added in order). Pairs with
// de = 0 (masked keys) are skipped.
void additive_scores_backward(const float* hidden, const float* de, const float* v, int64_t B, int64_t S,
                              int64_t A, float* duk, float* dwq, float* dv);

}  // namespace attn::ops

// The fused scaled-dot-product attention core that every Transformer layer runs:
//   out = softmax(scale * q k^T + mask) v        (Vaswani et al. 2017, eq. 1)
// over a batch of B * NH independent heads, plus the masked row softmax it is built on.
//
// Two paths compute the same numbers:
//  * materialised: per head, the scores are one GEMM [T, S], softmaxed in place, and the
//    weighted sum a second GEMM (one task per head). It keeps the weights P [B, NH, T, S] for
//    backward and hands them out on request. It computes all T x S scores whatever the mask. Best for short
//    sequences (S <= kStreamMinKeys), and the only path that returns weights.
//  * streaming (Dao et al. 2022; FlashAttention-2's loop order, Dao 2023): query blocks of
//    `block_q` rows walk over key blocks of `block_k` keys with a running (online) softmax, so
//    memory grows as T + S, not T S. Each query block visits only the keys its rows can see: causal
//    masks halve the work, a window of radius P costs O(T (2P + block_q) D) instead of
//    O(T S D), and padded keys past a sequence's length cost nothing. The cache keeps only the
//    output and one log-sum-exp per row; backward (one task per head, so no two threads write
//    the same gradient row) recomputes each score tile, one extra GEMM per tile, instead of
//    storing B*NH*T*S weights.
// Both call BLAS tiles through the seam, so the multiply-add counter sees exactly the work done.
#pragma once
#include <cstdint>

#include "attn/core/tensor.hpp"
#include "attn/ops/attention_mask.hpp"

namespace attn::ops {

enum class AttentionPath : uint8_t {
  automatic,   // streaming when no weights are wanted and S > kStreamMinKeys, else materialised
  materialised,
  streaming,   // ignored (materialised) when weights are requested
};
// Above this many keys streaming is the faster path, by more as the materialised weights outgrow
// the cache; up to it the two tie (bench/README.md, "Measurements behind design choices").
inline constexpr int64_t kStreamMinKeys = 64;

struct AttentionOptions {
  AttentionPath path = AttentionPath::automatic;
  // 128 x 128 tiles come closest to plain sgemm overall: shorter query tiles lose most under a
  // causal mask, longer key tiles lose on short sequences (bench/README.md, "Measurements behind
  // design choices").
  int64_t block_q = 128;   // streaming: query rows per tile
  int64_t block_k = 128;   // streaming: keys per tile
};

// Exactly what backward needs; filled by attention_forward when passed (nullptr for inference).
struct AttentionCache {
  Tensor q, k, v;   // the inputs (shared storage, not copies)
  AttentionMask mask;
  float scale = 1.0f;
  AttentionOptions options;
  bool streamed = false;
  Tensor weights;   // materialised: P [B, NH, T, S]
  Tensor out;       // streaming: the output [B, NH, T, Dv]
  Tensor lse;       // streaming: log sum_j exp(score_tj) per row [B, NH, T]; +inf if none visible
};

struct AttentionGrads {
  Tensor dq, dk, dv;   // fresh, shaped like q, k, v
};

// out = softmax(scale * q k^T, masked) v.
// q: [B, NH, T, Dk]   k: [B, NH, S, Dk]   v: [B, NH, S, Dv]   ->   out: [B, NH, T, Dv] (new tensor).
// `weights`, when not null, receives P [B, NH, T, S]: rows sum to 1 over visible keys and are
// exactly 0 on masked ones; a row with no visible key is all zeros, and so is its output.
// The weights share storage with cache->weights: read them, do not modify them.
Tensor attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                         const AttentionMask& mask, AttentionCache* cache, Tensor* weights = nullptr,
                         const AttentionOptions& options = {});

// dout: [B, NH, T, Dv]. Returns fresh dq, dk, dv (no parameters).
AttentionGrads attention_backward(const Tensor& dout, const AttentionCache& cache);

// In place: every row (b, h, t) of scores [B, NH, T, S] becomes the softmax over its visible keys
// under `mask` (the NH heads, maybe 1, share a mask; exact zeros on masked keys, an all-zero row
// if none).
void masked_softmax_inplace(Tensor& scores, const AttentionMask& mask);

// In place: dweights [..., S] becomes dscores = P * (dP - sum_j P_j dP_j) row by row, given the
// softmax output P of the same shape. Masked keys (P = 0) get exactly 0.
void masked_softmax_backward_inplace(Tensor& dweights, const Tensor& weights);

}  // namespace attn::ops

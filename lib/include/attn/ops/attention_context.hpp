// The backward of one query's attention context, c[b] = Σ_s alpha[b, s] values[b, s, :] (the
// RNN decoders' step: Bahdanau, Luong, local-p, the captioner): one pass over each batch row's
// values for both gradients, one batch row per task. As two batched GEMMs (a gemv and a rank-1
// update per row, B of each) it read the values twice and ran on one thread below the size at
// which a batch is split (32 x 320 x 64 in the captioner's step).
#pragma once
#include <cstdint>

namespace attn::ops {

// values [B, S, Dv], alpha [B, S], dctx [B, Dv]. ADDS values[b, s] . dctx[b] into dalpha[b, s] and
// alpha[b, s] dctx[b] into dvalues[b, s, :]. dvalues must not overlap values.
void attention_context_backward(const float* values, const float* alpha, const float* dctx, int64_t B, int64_t S,
                                int64_t Dv, float* dalpha, float* dvalues);

}  // namespace attn::ops

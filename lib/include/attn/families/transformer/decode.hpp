// Decoding a Transformer: greedy search, beam search and sampling, the searches of
// decode/search.hpp (which hold the rules: EOS, PAD/BOS never emitted, max_len, the beam) over
// the Transformer's incremental decoder.
//
// The decoder keeps every layer's self-attention keys and values in a KV cache and the
// cross-attention keys/values of the encoder memory are projected once, so each new token
// costs O(T D) per layer instead of re-running the prefix (O(T^2 D)). use_cache = false re-runs
// the whole prefix every step instead (same results up to rounding; it exists to test the
// cache). Finished sentences and hypotheses leave the batch (DecoderState::select), so the work
// per step shrinks as sentences end.
//
// Which model feeds what:
//   encdec  src [N, S] is the source sentence; the decoder starts from BOS.
//   lm      src (greedy) or prompt (sample) is a prompt: the decoder starts from BOS, is fed
//           the prompt tokens, and generates the continuation (returned without the prompt).
//   mlm     has no decoder (ConfigError).
// Generation ends at EOS (not included in the tokens) or after max_len generated tokens
// (capped so that BOS + prompt + tokens fit the model's max_len positions).
//
// Beam search (encdec only) ranks finished hypotheses by the GNMT length penalty (Wu et al.
// 2016, eq. 14; the tool's default alpha is 0.6):
//   score(Y) = log P(Y | X) / lp(Y),   lp(Y) = ((5 + |Y|) / 6)^alpha,   alpha = length_penalty,
// |Y| counting the EOS; alpha = 0 compares raw log-probabilities, alpha = 1 is close to
// per-token normalisation. Beam 1 gives the greedy result.
#pragma once
#include <cstdint>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/decode/decoding.hpp"
#include "attn/decode/search.hpp"
#include "attn/families/transformer/model.hpp"

namespace attn::transformer {

// src: int32 [N, S], src_len: int32 [N] (decode/decoding.hpp: the options and the result). With
// want_attention the result holds, per decoder layer l, "self/layer<l>" [N, NH, T, T] and (encdec)
// "cross/layer<l>" [N, NH, T, S]: row t is the decoder position fed t-th (BOS, [prompt,] tokens),
// the query that predicted the next token; rows past a sentence's own are zero. use_cache = false
// re-runs the whole prefix every step (the test of the KV cache).
decode::Decoded greedy(const Transformer& model, const Tensor& src, const Tensor& src_len,
                       const decode::DecodeOptions& options, bool use_cache = true);
decode::Decoded beam_search(const Transformer& model, const Tensor& src, const Tensor& src_len,
                            const decode::DecodeOptions& options, bool use_cache = true);

// Ancestral sampling from softmax(logits / temperature) (restricted to the top k), each draw
// from `rng` (reproducible for a seed); temperature 0 is greedy search. prompt: int32 [N, Tp]
// (may be [N, 0]), prompt_len [N]; options.beam must be 1.
decode::Decoded sample(const Transformer& model, const Tensor& prompt, const Tensor& prompt_len,
                       const decode::DecodeOptions& options, const decode::Sampling& sampling, Rng& rng,
                       bool use_cache = true);

}  // namespace attn::transformer

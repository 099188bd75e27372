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
// 2016, eq. 14):
//   score(Y) = log P(Y | X) / lp(Y),   lp(Y) = ((5 + |Y|) / 6)^alpha,   alpha = length_penalty,
// |Y| counting the EOS; alpha = 0 compares raw log-probabilities, alpha = 1 is close to
// per-token normalisation. Beam 1 gives the greedy result.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/decode/search.hpp"
#include "attn/families/transformer/model.hpp"

namespace attn::transformer {

struct DecodeOptions {
  int64_t max_len = 100;        // >= 1 generated tokens at most
  int64_t beam = 1;             // >= 1 (beam_search)
  float length_penalty = 1.0f;  // GNMT alpha >= 0 (beam_search)
  bool use_cache = true;
  bool want_attention = false;
};

struct DecodeResult {
  std::vector<std::vector<int32_t>> tokens;   // per sentence, without BOS, ending before EOS
  // Sum of the generated tokens' log-probabilities (EOS included when produced); beam search:
  // divided by the length penalty lp(Y).
  std::vector<float> scores;
  // With want_attention, per decoder layer: self [N, NH, T, T] and cross [N, NH, T, S] weights
  // (lm: no cross). Row t is the decoder position fed t-th (BOS, [prompt,] tokens), the query
  // that predicted the next token; T is the longest row count, and shorter sentences are
  // padded with zero rows.
  std::vector<Tensor> self_attention, cross_attention;
};

// src: int32 [N, S], src_len: int32 [N].
DecodeResult greedy(const Transformer& model, const Tensor& src, const Tensor& src_len,
                    const DecodeOptions& options);
DecodeResult beam_search(const Transformer& model, const Tensor& src, const Tensor& src_len,
                         const DecodeOptions& options);

struct SampleOptions {
  int64_t max_len = 100;
  float temperature = 1.0f;   // >= 0; 0 picks the argmax (greedy)
  int64_t top_k = 0;          // > 0: sample among the k most likely tokens only; 0: all
  bool use_cache = true;
};
// Ancestral sampling from softmax(logits / temperature) (restricted to the top k), each draw
// from `rng` (reproducible for a seed). prompt: int32 [N, Tp] (may be [N, 0]), prompt_len [N].
DecodeResult sample(const Transformer& model, const Tensor& prompt, const Tensor& prompt_len,
                    const SampleOptions& options, Rng& rng);

}  // namespace attn::transformer

// Non-autoregressive decoding of a Transformer: mask-predict (Ghazvininejad et al. 2019,
// "Mask-Predict", sec. 3.3 and 4) over a cmlm model (model.hpp), with length beam.
//
// For each source, the length predictor's `length_beam` most likely target lengths (offsets from
// the source length, model.hpp; lengths 0..max_len) are decoded in parallel. Each candidate of
// length n runs T iterations over the non-causal decoder:
//   iteration 0:          every position is [MASK]; every token is predicted;
//   iteration t = 1..T-1: the r = floor(n (T - t) / T) tokens of lowest probability are re-masked
//                         (ties: the earlier position first) and predicted again; the others keep
//                         their tokens and probabilities.
// A prediction is the argmax of the position's log-softmax with PAD, BOS and EOS forbidden (y
// never holds them), and its probability that maximum. The candidate with the best mean
// log-probability over its tokens is kept (ties: the more likely length); an empty candidate
// (length 0) is kept only when every candidate is empty, with score 0. Its score is that mean
// (decode::Decoded::scores); there is no EOS.
//
// With LengthRule::eos (model.hpp) there is one candidate per source, of eos_positions(|x|)
// positions (capped by max_len), EOS is a prediction like any token, and the output is the
// tokens before the first EOS; its score the mean log-probability of those and of that EOS.
//
// Each iteration re-runs the whole decoder (no KV cache: every position sees every other), over
// all N x length_beam candidates at once.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/decode/decoding.hpp"
#include "attn/families/transformer/model.hpp"

namespace attn::transformer {

struct MaskPredictOptions {
  int64_t iterations = 0;        // T >= 1, or 0: the model's TransformerConfig::default_iterations()
  int64_t length_beam = 1;       // L in [1, max_len + 1] candidate lengths per source
  int64_t max_len = 0;           // > 0: no candidate longer (a cap below the model's max_len); 0: none
  bool want_attention = false;   // the last iteration's weights (mask_predict)
};

// Throws ConfigError naming the option and its range for options out of range for `config`.
void check_mask_predict_options(const TransformerConfig& config, const MaskPredictOptions& options);

// mask-predict over a cmlm model. src: int32 [N, S], src_len: int32 [N]. The result's tokens and
// scores (above), and in `outputs` the chosen candidates' refinement, I = options.iterations:
//   "iterations/tokens"  int32 [N, I, Lmax]  the tokens after each iteration (PAD past the length;
//                                            with the cut at </s>, every position filled, EOS
//                                            included)
//   "iterations/masked"  int32 [N, I, Lmax]  1 where the position was masked and predicted at that
//                                            iteration (iteration 0: every position), else 0
// (Lmax the longest output, at least 1). With want_attention, `attention` holds the weights of
// the pass that produced the final tokens (the last iteration's inputs: the output with that
// iteration's masked positions [MASK]) of every decoder layer, as the autoregressive decoder's:
//   "self/layer<l>"   [N, H, Lmax, Lmax]
//   "cross/layer<l>"  [N, H, Lmax, S]  over the source tokens (the rest of a row, 1 - its sum,
//                                      went to [LENGTH])
// rows and columns past an output's length zero. ConfigError for another architecture or bad
// options.
decode::Decoded mask_predict(const Transformer& model, const Tensor& src, const Tensor& src_len,
                             const MaskPredictOptions& options);

// GLAT's training batch (model.hpp, TargetMasking::glancing): the first pass over every target
// position [MASK]ed (the model's inference forward: no dropout, no gradient), its argmax
// predictions, then glance_targets with the model's glancing_ratio. ConfigError for another
// architecture.
CmlmBatch glancing_batch(const Transformer& model, const data::TokenBatch& batch, Rng& rng);

// ---- the search itself, over any scorer (tests drive it with logits they choose) ----

// Logits [R, Lmax, V] of rows tokens [R, Lmax] (int32, [MASK] = mask_id where masked, PAD past a
// row's length) whose lengths are `lengths` [R].
using NatScorer = std::function<Tensor(const Tensor& tokens, const Tensor& lengths)>;

struct MaskPredictSearch {
  Tensor tokens;      // int32 [R, Lmax]: the final tokens, PAD past each length
  Tensor log_probs;   // float32 [R, Lmax]: each token's log-probability when it was last predicted
  Tensor history;     // int32 [R, I, Lmax]: the tokens after each iteration
  Tensor masked;      // int32 [R, I, Lmax]: 1 where predicted at that iteration
};
// mask-predict's iterations (above) for R rows of the given lengths [R] (Lmax = the longest, at
// least 1), V the logits' width, mask_id the [MASK] id fed to the scorer.
MaskPredictSearch mask_predict_search(const NatScorer& score, const std::vector<int32_t>& lengths, int64_t V,
                                      int32_t mask_id, int64_t iterations, bool allow_eos = false);

}  // namespace attn::transformer

// Decoding the RNN encoder-decoder (families/seq2seq): greedy search and beam search, the
// searches of decode/search.hpp (which hold the rules: EOS, PAD/BOS never emitted, max_len, the
// beam) over the model's step-by-step decoder, each returning the alignment (attention
// weights) behind every emitted token.
//
// Beam search ranks finished hypotheses by length normalisation (Wu et al. 2016 compare it
// with their GNMT penalty):
//   score(y) = log p(y | x) / |y|^alpha,   alpha = length_penalty,
// |y| counting the EOS; alpha = 0 compares raw log-probabilities. Beam 1 gives the greedy
// result. The log-probabilities are the model's LogSoftmax::double_sum.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/decode/search.hpp"
#include "attn/families/seq2seq/model.hpp"

namespace attn::seq2seq {

struct Seq2SeqDecodeOptions {
  int64_t max_len = 100;        // >= 1 emitted tokens per sentence, EOS excluded
  int64_t beam = 1;             // BW >= 1 (beam_search)
  float length_penalty = 1.0f;  // alpha >= 0 of log p / |y|^alpha (beam_search)
};

struct Seq2SeqDecodeResult {
  std::vector<std::vector<int32_t>> tokens;   // per sentence, without BOS, ending before EOS
  std::vector<float> scores;                  // log-probabilities (beam: length-normalised)
  Tensor alignment;                           // [N, T, S]: row t = the weights that emitted
                                              // token t (T = longest output); zeros elsewhere
};

// src: int32 [N, S], src_len: int32 [N].
Seq2SeqDecodeResult greedy(const Seq2Seq& model, const Tensor& src, const Tensor& src_len,
                           const Seq2SeqDecodeOptions& options);
Seq2SeqDecodeResult beam_search(const Seq2Seq& model, const Tensor& src, const Tensor& src_len,
                                const Seq2SeqDecodeOptions& options);

}  // namespace attn::seq2seq

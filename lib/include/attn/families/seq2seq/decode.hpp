// Decoding the RNN encoder-decoder (families/seq2seq): greedy search and beam search, the
// searches of decode/search.hpp (which hold the rules: EOS, PAD/BOS never emitted, max_len, the
// beam) over the model's step-by-step decoder, with the alignment (attention weights) behind
// every emitted token.
//
// Beam search ranks finished hypotheses by length normalisation (Wu et al. 2016 compare it
// with their GNMT penalty; the tool's default alpha is 1):
//   score(y) = log p(y | x) / |y|^alpha,   alpha = length_penalty,
// |y| counting the EOS; alpha = 0 compares raw log-probabilities. Beam 1 gives the greedy
// result. The log-probabilities are the model's LogSoftmax::double_sum.
#pragma once
#include "attn/core/tensor.hpp"
#include "attn/decode/decoding.hpp"
#include "attn/families/seq2seq/model.hpp"

namespace attn::seq2seq {

// src: int32 [N, S], src_len: int32 [N] (decode/decoding.hpp: the options and the result). With
// want_attention, a model with attention returns "alignment" [N, T, S]: row t the weights that
// emitted token t, zero past a sentence's tokens.
decode::Decoded greedy(const Seq2Seq& model, const Tensor& src, const Tensor& src_len,
                       const decode::DecodeOptions& options);
decode::Decoded beam_search(const Seq2Seq& model, const Tensor& src, const Tensor& src_len,
                            const decode::DecodeOptions& options);

}  // namespace attn::seq2seq

// Decoding the captioner (families/caption): greedy search and beam search, the searches of
// decode/search.hpp (which hold the rules: EOS, PAD/BOS never emitted, max_len, the beam) over
// the model's step-by-step decoder, with the attention behind every emitted word. Beam search
// ranks finished captions by log p(y | image) / |y|^alpha (alpha = length_penalty, |y| counting
// the EOS; the tool's default alpha is 0); beam 1 is greedy search.
#pragma once
#include "attn/core/tensor.hpp"
#include "attn/decode/decoding.hpp"
#include "attn/families/caption/model.hpp"

namespace attn::caption {

// images: [N, C, H, W] (decode/decoding.hpp: the options and the result). With want_attention the
// result holds "attention" [N, T, R]: row t the weights over the image's R locations behind word
// t (zero past a caption's words).
decode::Decoded greedy(const Captioner& model, const Tensor& images, const decode::DecodeOptions& options);
decode::Decoded beam_search(const Captioner& model, const Tensor& images, const decode::DecodeOptions& options);

}  // namespace attn::caption

// Decoding the captioner (families/caption): greedy search and beam search, the searches of
// decode/search.hpp (which hold the rules: EOS, PAD/BOS never emitted, max_len, the beam) over
// the model's step-by-step decoder, each returning the attention behind every emitted word.
// Beam search ranks finished captions by log p(y | image) / |y|^alpha (alpha = length_penalty,
// |y| counting the EOS); beam 1 is greedy search.
#pragma once
#include <cstdint>

#include "attn/core/tensor.hpp"
#include "attn/decode/search.hpp"
#include "attn/families/caption/model.hpp"

namespace attn::caption {

struct CaptionDecodeOptions {
  int64_t max_len = 30;         // >= 1 words per caption, EOS excluded
  int64_t beam = 1;             // BW >= 1
  float length_penalty = 0.0f;  // alpha >= 0 (beam search)
};

// images: [N, C, H, W]. The result's attention is [N, T, L]: row t the weights over the image's
// L locations behind word t (T the longest caption; zeros past a caption's words).
decode::SearchResult caption(const Captioner& model, const Tensor& images, const CaptionDecodeOptions& options);

}  // namespace attn::caption

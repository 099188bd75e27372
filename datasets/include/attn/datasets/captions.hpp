// The image-captioning layout shared by `mnist-strips` and `shapes` (datasets/README.md, "Image
// captioning"): images, a caption per image as target ids (the token conventions of the
// translation sets), and for every caption word the box of the object it names, so that a
// captioner's attention over the image can be scored against where the word's object is.
//   /<split>/images   [N, C, H, W] float32  pixel intensities in [0, 1]
//   /<split>/tgt      [N, T]       int32    caption word ids then EOS (2), padded with 0
//   /<split>/tgt_len  [N]          int32    words + 1 (EOS counted)
//   /<split>/boxes    [N, T, 4]    int32    (y0, x0, y1, x1), half-open pixel box of the object
//                                           that word t names; all -1 for other words, EOS, padding
//   /vocab/tgt        [V]          strings  "<pad>" "<s>" "</s>" "<unk>", then the words
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/datasets/splits.hpp"

namespace attn::io { class File; }

namespace attn::datasets {

// A half-open pixel box: rows y0..y1-1, columns x0..x1-1.
struct Box {
  int32_t y0 = 0, x0 = 0, y1 = 0, x1 = 0;
  // This box moved down by y and right by x: a box within an object, placed in the image.
  Box at(int64_t y, int64_t x) const {
    return {static_cast<int32_t>(y + y0), static_cast<int32_t>(x + x0), static_cast<int32_t>(y + y1),
            static_cast<int32_t>(x + x1)};
  }
};

struct CaptionSplit {
  std::string name;
  Tensor images;    // [N, C, H, W] f32
  Tensor tgt;       // [N, T] i32
  Tensor tgt_len;   // [N] i32
  Tensor boxes;     // [N, T, 4] i32

  // Zero images; tgt padded with 0; boxes all -1.
  CaptionSplit(std::string split, int64_t n, int64_t channels, int64_t height, int64_t width, int64_t T);
  CaptionSplit() = default;
  int64_t size() const { return tgt.dim(0); }
  // Sets caption i: word ids, then EOS; box t for word t (nullptr: the word names no object).
  void set_caption(int64_t i, const std::vector<int32_t>& words, const std::vector<const Box*>& word_boxes);
};

// "<pad>" "<s>" "</s>" "<unk>" followed by `words` (ids 4, 5, ...).
std::vector<std::string> caption_vocabulary(const std::vector<std::string>& words);

// Writes /<split>/{images, tgt, tgt_len, boxes} for the three splits and /vocab/tgt.
void write_captions(io::File& file, const Splits<CaptionSplit>& splits, const std::vector<std::string>& vocab);

// The tight bounding box of the pixels above 0 of a [H, W] block (row stride `stride`); an
// all-zero block gives its whole extent.
template <class T>
Box ink_box(const T* pixels, int64_t H, int64_t W, int64_t stride) {
  int64_t y0 = H, x0 = W, y1 = 0, x1 = 0;
  for (int64_t r = 0; r < H; ++r)
    for (int64_t c = 0; c < W; ++c)
      if (pixels[r * stride + c] > 0) {
        y0 = std::min(y0, r), y1 = std::max(y1, r + 1);
        x0 = std::min(x0, c), x1 = std::max(x1, c + 1);
      }
  if (y1 == 0) y0 = 0, x0 = 0, y1 = H, x1 = W;
  return {static_cast<int32_t>(y0), static_cast<int32_t>(x0), static_cast<int32_t>(y1), static_cast<int32_t>(x1)};
}

}  // namespace attn::datasets

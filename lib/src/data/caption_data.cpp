// Reading and checking image-captioning splits (caption_data.hpp).
#include "attn/data/caption_data.hpp"

#include <cmath>

#include "attn/core/error.hpp"
#include "attn/data/token_data.hpp"

namespace attn::data {

std::vector<int32_t> CaptionSplit::lengths() const {
  return {tgt_len.idata(), tgt_len.idata() + tgt_len.numel()};
}

CaptionSplit read_caption_split(const io::File& file, const std::string& split, int64_t vocab) {
  CaptionSplit s;
  s.name = split;
  const TokenSplit captions = read_token_split(file, split, {.src = false, .tgt = true, .tgt_vocab = vocab});
  s.tgt = captions.tgt;
  s.tgt_len = captions.tgt_len;
  const int64_t N = s.size(), T = s.tgt.dim(1);
  const std::string where = file.display_name() + ": dataset '/" + split + "/";
  const std::string images = "/" + split + "/images";
  s.images = file.read(images, DType::f32, {kAny, kAny, kAny, kAny});
  if (s.images.dim(0) != N)
    throw ShapeError(where + "images' has " + std::to_string(s.images.dim(0)) + " images but '/" + split +
                     "/tgt' has " + std::to_string(N) + " captions");
  const int64_t per_image = N > 0 ? s.images.numel() / N : 0;
  for (int64_t i = 0; i < s.images.numel(); ++i)
    if (!std::isfinite(s.images.data()[i]))
      throw DataError(where + "images' image " + std::to_string(i / per_image) + " holds a non-finite value (" +
                      std::to_string(s.images.data()[i]) + ")");
  const std::string boxes = "/" + split + "/boxes";
  if (!file.exists(boxes)) return s;
  s.boxes = file.read(boxes, DType::i32, {N, T, 4});
  const int64_t H = s.images.dim(2), W = s.images.dim(3);
  for (int64_t r = 0; r < N * T; ++r) {
    const int32_t* b = s.boxes.idata() + r * 4;
    const bool none = b[0] == -1 && b[1] == -1 && b[2] == -1 && b[3] == -1;
    const bool box = 0 <= b[0] && b[0] < b[2] && b[2] <= H && 0 <= b[1] && b[1] < b[3] && b[3] <= W;
    if (!none && !box)
      throw DataError(where + "boxes' row " + std::to_string(r / T) + " word " + std::to_string(r % T) + " is (" +
                      std::to_string(b[0]) + ", " + std::to_string(b[1]) + ", " + std::to_string(b[2]) + ", " +
                      std::to_string(b[3]) + "), expected all -1 or a (y0, x0, y1, x1) box inside the " +
                      std::to_string(H) + " x " + std::to_string(W) + " image");
  }
  return s;
}

Vocab read_caption_vocab(const io::File& file) { return read_vocab(file, kCaptionVocab); }

}  // namespace attn::data

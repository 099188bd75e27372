// Reading and checking image-captioning splits (caption_data.hpp).
#include "attn/families/caption/caption_data.hpp"

#include <cmath>

#include "attn/core/error.hpp"
#include "attn/data/token_data.hpp"

namespace attn::caption {

std::vector<int32_t> CaptionSplit::lengths() const {
  return {tgt_len.idata(), tgt_len.idata() + tgt_len.numel()};
}

CaptionSplit read_caption_split(const io::File& file, const std::string& split, int64_t vocab,
                                const io::RowSet& rows) {
  CaptionSplit s;
  s.name = split;
  const data::TokenSplit captions = data::read_token_split(file, split, {.src = false, .tgt = true, .tgt_vocab = vocab},
                                                           rows);
  s.tgt = captions.tgt;
  s.tgt_len = captions.tgt_len;
  const int64_t N = file.shape("/" + split + "/tgt")[0], T = s.tgt.dim(1);
  const std::string where = file.display_name() + ": dataset '/" + split + "/";
  const std::string images_ds = "/" + split + "/images";
  const Tensor x = file.read(images_ds, DType::f32, {kAny, kAny, kAny, kAny}, rows);
  if (const int64_t images = file.shape(images_ds)[0]; images != N)
    throw ShapeError(where + "images' has " + std::to_string(images) + " images but '/" + split + "/tgt' has " +
                     std::to_string(N) + " captions");
  const int64_t per_image = x.dim(0) > 0 ? x.numel() / x.dim(0) : 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (!std::isfinite(x.data()[i]))
      throw DataError(where + "images' image " + std::to_string(rows.file_row(i / per_image)) +
                      " holds a non-finite value (" + std::to_string(x.data()[i]) + ")");
  s.images = x;
  const std::string boxes_ds = "/" + split + "/boxes";
  if (!file.exists(boxes_ds)) return s;
  const Tensor boxes = file.read(boxes_ds, DType::i32, {N, T, 4}, rows);
  const int64_t H = x.dim(2), W = x.dim(3);
  for (int64_t r = 0; r < boxes.numel() / 4; ++r) {
    const int32_t* b = boxes.idata() + r * 4;
    const bool none = b[0] == -1 && b[1] == -1 && b[2] == -1 && b[3] == -1;
    const bool box = 0 <= b[0] && b[0] < b[2] && b[2] <= H && 0 <= b[1] && b[1] < b[3] && b[3] <= W;
    if (!none && !box)
      throw DataError(where + "boxes' row " + std::to_string(rows.file_row(r / T)) + " word " + std::to_string(r % T) +
                      " is (" + std::to_string(b[0]) + ", " + std::to_string(b[1]) + ", " + std::to_string(b[2]) + ", " +
                      std::to_string(b[3]) + "), expected all -1 or a (y0, x0, y1, x1) box inside the " +
                      std::to_string(H) + " x " + std::to_string(W) + " image");
  }
  s.boxes = boxes;
  return s;
}

CaptionSplit open_caption_split(const io::File& file, const std::string& split, int64_t vocab, data::KeepData keep,
                                dist::Communicator& ranks) {
  const CaptionSplit layout = read_caption_split(file, split, vocab, io::RowSet::range(0, 0));
  const std::string g = "/" + split + "/";
  const int64_t n = file.shape(g + "tgt")[0];
  const Shape image = file.shape(g + "images");
  const int64_t row_bytes = (numel(image) / std::max<int64_t>(n, 1) + layout.tgt.dim(1) * 5 + 1) * 4;
  if (!data::keep_in_file(keep, n * row_bytes, ranks)) return read_caption_split(file, split, vocab);
  data::for_shared_blocks(n, row_bytes, ranks, [&](int64_t begin, int64_t end) {
    (void)read_caption_split(file, split, vocab, io::RowSet::range(begin, end));
  });
  CaptionSplit s;
  s.name = split;
  s.images = data::Rows(file, g + "images", DType::f32);
  s.tgt = data::Rows(file, g + "tgt", DType::i32);
  s.tgt_len = file.read(g + "tgt_len", DType::i32, {n});
  if (file.exists(g + "boxes")) s.boxes = data::Rows(file, g + "boxes", DType::i32);
  return s;
}

data::Vocab read_caption_vocab(const io::File& file) { return data::read_vocab(file, kCaptionVocab); }

}  // namespace attn::caption

// The image-captioning layout: building one split and writing the file (see captions.hpp).
#include "attn/datasets/captions.hpp"

#include <algorithm>

#include "attn/data/vocab.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {

CaptionSplit::CaptionSplit(std::string split, int64_t n, int64_t channels, int64_t height, int64_t width,
                           int64_t T)
    : name(std::move(split)),
      images({n, channels, height, width}),
      tgt({n, T}, DType::i32),
      tgt_len({n}, DType::i32),
      boxes({n, T, 4}, DType::i32) {
  std::fill(boxes.idata(), boxes.idata() + boxes.numel(), -1);
}

void CaptionSplit::set_caption(int64_t i, const std::vector<int32_t>& words,
                               const std::vector<const Box*>& word_boxes) {
  const int64_t T = tgt.dim(1);
  const auto L = static_cast<int64_t>(words.size());
  if (L + 1 > T || word_boxes.size() != words.size())
    throw Error("CaptionSplit::set_caption: " + std::to_string(L) + " words and " +
                std::to_string(word_boxes.size()) + " boxes for rows of " + std::to_string(T));
  int32_t* row = tgt.idata() + i * T;
  int32_t* box = boxes.idata() + i * T * 4;
  std::fill(row, row + T, data::kPad);
  std::fill(box, box + T * 4, -1);
  for (int64_t t = 0; t < L; ++t) {
    row[t] = words[static_cast<size_t>(t)];
    if (const Box* b = word_boxes[static_cast<size_t>(t)]) {
      box[4 * t] = b->y0, box[4 * t + 1] = b->x0, box[4 * t + 2] = b->y1, box[4 * t + 3] = b->x1;
    }
  }
  row[L] = data::kEos;
  tgt_len.idata()[i] = static_cast<int32_t>(L + 1);
}

std::vector<std::string> caption_vocabulary(const std::vector<std::string>& words) {
  std::vector<std::string> vocab(std::begin(data::kReservedTokens), std::end(data::kReservedTokens));
  vocab.insert(vocab.end(), words.begin(), words.end());
  return vocab;
}

void write_captions(io::File& file, const Splits<CaptionSplit>& splits, const std::vector<std::string>& vocab) {
  for (int k = 0; k < 3; ++k) {
    const CaptionSplit& s = splits[k];
    file.write_all(std::string("/") + kSplitNames[k] + "/",
                   {{"images", s.images}, {"tgt", s.tgt}, {"tgt_len", s.tgt_len}, {"boxes", s.boxes}});
  }
  file.write_strings("/vocab/tgt", vocab);
}

}  // namespace attn::datasets

// The image-captioning layout (datasets/README.md, "Image captioning"), one definition: written
// by `attn-data mnist-strips` and `attn-data shapes`, read and checked once by the tools that
// train on it. Per split:
//   /<split>/images    float32 [N, C, H, W]  pixel intensities
//   /<split>/tgt       int32 [N, T]          caption word ids, then EOS (2), padded with 0
//   /<split>/tgt_len   int32 [N]             words + 1 (EOS counted)
//   /<split>/boxes     int32 [N, T, 4]       optional: (y0, x0, y1, x1), the half-open pixel box of
//                                            the object word t names; all -1 for a word naming none
//   /vocab/tgt         strings               the words (data::Vocab, ids 0-3 reserved)
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "attn/core/tensor.hpp"
#include "attn/data/rows.hpp"
#include "attn/data/vocab.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::caption {

inline constexpr const char* kCaptionVocab = "/vocab/tgt";

struct CaptionSplit {
  std::string name;      // "train", "valid", "test"
  data::Rows images;     // float32 [N, C, H, W]
  data::Rows tgt;        // int32 [N, T]
  Tensor tgt_len;        // int32 [N]
  data::Rows boxes;      // int32 [N, T, 4]; empty when the file has none

  int64_t size() const { return tgt_len.numel(); }
  bool has_boxes() const { return !boxes.empty(); }
  std::vector<int32_t> lengths() const;   // tgt_len, for batching
};

// Reads and checks one split: images of rank 4 with every value finite, captions as
// read_token_split checks them (lengths in [1, T], ids in [0, vocab)), the same N everywhere, and
// boxes (when present) [N, T, 4] each all -1 or 0 <= y0 < y1 <= H, 0 <= x0 < x1 <= W. Every
// failure names the file, the dataset and the row (FormatError, ShapeError, DataError). Reads rows
// `rows` (all by default) into memory.
CaptionSplit read_caption_split(const io::File& file, const std::string& split, int64_t vocab,
                                const io::RowSet& rows = io::RowSet::all());
// A split for training, kept as `keep` says (data/rows.hpp): read whole into memory, or checked a
// block of rows at a time with images, captions and boxes left in `file`, which must outlive it
// (the ranks of `ranks` each checking their share).
CaptionSplit open_caption_split(const io::File& file, const std::string& split, int64_t vocab, data::KeepData keep,
                                dist::Communicator& ranks = dist::world());

// The captions' vocabulary, /vocab/tgt (read_vocab).
data::Vocab read_caption_vocab(const io::File& file);

}  // namespace attn::caption

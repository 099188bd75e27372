// The labelled layout of classification and sentence-pair classification data sets, one
// definition: written by attn-data's importers (babi-cls, pairs), read and checked once by the
// tools that fine-tune on it (datasets/README.md, "Labelled sequences"). Per split:
//   /<split>/src        int32 [N, L]   token ids, no BOS/EOS/[CLS]/[SEP] (the model adds them),
//                                      padded with 0
//   /<split>/src_len    int32 [N]      tokens per row, in [1, L]
//   /<split>/segments   integer [N, L] (int8, uint8 or int32) 0 for sentence A, 1 for sentence B:
//                                      a row is 0...0 then 1...1 (B may be absent), 0 beyond
//                                      src_len
//   /<split>/label      int32 [N]      the class, in [0, K)
// and once per file:
//   /labels             string [K]     the class names, in class order
//   /vocab/src          string [V]     the token vocabulary (data::Vocab, ids 0-3 reserved)
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/data/rows.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::transformer {

inline constexpr const char* kLabelsDataset = "/labels";

struct LabelledSplit {
  std::string name;          // "train", "valid", "test"
  data::Rows src;            // int32 [N, L]
  Tensor src_len;            // int32 [N]
  data::Rows segments;       // int32 [N, L], 0/1
  Tensor label;              // int32 [N]
  int64_t size() const { return src_len.numel(); }
  // Whether any row has a sentence B (a segment 1).
  bool has_pairs() const;
};

// Reads and checks one split: a missing split or dataset (FormatError), ranks and row counts
// (ShapeError), src_len outside [1, L], a token id outside [0, vocab_size) (vocab_size > 0), a
// segment not 0 or 1, a segment row that is not 0...0 1...1 or not 0 past src_len, a label
// outside [0, num_labels) (DataError). Every message names the file, the dataset and the row.
// Reads rows `rows` (all by default) into memory.
LabelledSplit read_labelled_split(const io::File& file, const std::string& split, int64_t vocab_size,
                                  int64_t num_labels, const io::RowSet& rows = io::RowSet::all());
// A split for training, kept as `keep` says (data/rows.hpp): read whole into memory, or checked a
// block of rows at a time with src and segments left in `file`, which must outlive it (the ranks
// of `ranks` each checking their share).
LabelledSplit open_labelled_split(const io::File& file, const std::string& split, int64_t vocab_size,
                                  int64_t num_labels, data::KeepData keep, dist::Communicator& ranks = dist::world());
// Writes the four datasets of `s` (segments as uint8).
void write_labelled_split(io::File& file, const std::string& split, const LabelledSplit& s);

// /labels: K >= 2 distinct, non-empty names (FormatError naming the file otherwise).
std::vector<std::string> read_labels(const io::File& file);
void write_labels(io::File& file, const std::vector<std::string>& labels);

// Rows `index` of `split` (in that order), cut to the longest selected row.
LabelledSplit gather_labelled(const LabelledSplit& split, std::span<const int64_t> index);

}  // namespace attn::transformer

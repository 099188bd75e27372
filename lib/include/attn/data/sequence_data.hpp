// The sequence-to-sequence layout of the NTM tasks (datasets/README.md, "NTM tasks"): one
// definition, written by attn-data's generators and read, checked, by the tools that train on
// it. Per split:
//   /<split>/inputs      float32 [N, Tin, I]    the input phase; rows t >= input_len[i] are 0
//   /<split>/input_len   int32   [N]            in [1, Tin]
//   /<split>/targets     float32 [N, Tout, O]   the bits (0 or 1) wanted after the input phase;
//                                               rows t >= target_len[i] are 0
//   /<split>/target_len  int32   [N]            in [1, Tout]
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "attn/core/tensor.hpp"
#include "attn/data/rows.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::data {

// Sequences in memory: a batch, or a split gathered whole.
struct SequenceBatch {
  Tensor inputs;       // [B, Tin, I]    float32
  Tensor input_len;    // [B]            int32
  Tensor targets;      // [B, Tout, O]   float32
  Tensor target_len;   // [B]            int32

  int64_t size() const { return input_len.numel(); }
};

// A split: its rows in memory or left in the data file (data/rows.hpp), the lengths in memory.
struct SequenceSplit {
  Rows inputs;         // [N, Tin, I]    float32
  Tensor input_len;    // [N]            int32
  Rows targets;        // [N, Tout, O]   float32
  Tensor target_len;   // [N]            int32

  int64_t size() const { return input_len.numel(); }
  int64_t input_width() const { return inputs.dim(2); }
  int64_t output_width() const { return targets.dim(2); }
  // Rows `index` (in that order), each example's rows cut to the longest selected lengths.
  SequenceBatch gather(std::span<const int64_t> index) const;
};

// Writes the four datasets of `split` ("train", ...).
void write_sequence_split(io::File& file, const std::string& split, const SequenceSplit& s);

// Reads and checks one split: ranks and row counts (ShapeError), lengths in range, every input
// finite and every target 0 or 1 (DataError naming the file, dataset and row); a missing split or dataset is a
// FormatError listing what the file has. Reads rows `rows` (all by default) into memory.
SequenceSplit read_sequence_split(const io::File& file, const std::string& split,
                                  const io::RowSet& rows = io::RowSet::all());
// A split for training, kept as `keep` says (data/rows.hpp): read whole into memory, or checked a
// block of rows at a time with inputs and targets left in `file`, which must outlive it (the ranks
// of `ranks` each checking their share).
SequenceSplit open_sequence_split(const io::File& file, const std::string& split, KeepData keep,
                                  dist::Communicator& ranks = dist::world());

}  // namespace attn::data

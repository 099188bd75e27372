// The algorithmic tasks of the Neural Turing Machine paper (Graves, Wayne and Danihelka 2014,
// "Neural Turing Machines", section 4): copy (4.1), repeat copy (4.2), associative recall
// (4.3) and priority sort (4.5), as fixed data sets of float32 sequences.
//
// Every task has one layout (datasets/README.md gives each channel):
//   inputs      [N, Tin, I]    float32  the input phase; rows past input_len[i] are zero
//   input_len   [N]            int32
//   targets     [N, Tout, O]   float32  what the model emits after the input phase, while
//                                       it is fed zero vectors; rows past target_len[i] are 0
//   target_len  [N]            int32
// Binary data channels are 0/1 bits, each drawn with probability 1/2. The loss mask of
// example i is `t < target_len[i]`, so no separate mask is stored.
#pragma once
#include <cstdint>
#include <string>

#include "attn/core/tensor.hpp"
#include "attn/data/sequence_data.hpp"
#include "attn/datasets/splits.hpp"

namespace attn::datasets {

using data::SequenceSplit;   // the layout, read and written by lib/data/sequence_data.hpp

// Copy (4.1): L ~ U{min_len..max_len} random vectors of `width` bits, then one delimiter row.
// I = width + 1 (channel width: delimiter), Tin = max_len + 1; the target is the sequence,
// O = width, Tout = max_len. Graves: width 8, L in 1..20.
struct CopyConfig {
  int64_t width = 8;
  int64_t min_len = 1;
  int64_t max_len = 20;
};

// Repeat copy (4.2): the sequence, then one row with the delimiter flag (channel width) and
// the repeat count c ~ U{min_repeat..max_repeat} normalised as (c - mu) / sigma (channel
// width + 1), mu and sigma being the mean and standard deviation of U{1..norm_repeat}: the
// encoding of a count stays fixed when --max-repeat grows for a generalisation test. The target
// is the sequence c times, then an end-marker row (channel width). I = width + 2,
// Tin = max_len + 1, O = width + 1, Tout = max_len * max_repeat + 1. Graves: width 8,
// L in 1..10, c in 1..10.
struct RepeatCopyConfig {
  int64_t width = 8;
  int64_t min_len = 1;
  int64_t max_len = 10;
  int64_t min_repeat = 1;
  int64_t max_repeat = 10;
  int64_t norm_repeat = 10;
};
// The value of the count channel for `count` repeats.
float repeat_count_code(int64_t count, int64_t norm_repeat);

// Associative recall (4.3): k ~ U{min_items..max_items} distinct items, each item_len rows of
// `width` bits, each preceded by an item-delimiter row (channel width); then the query, a copy
// of item q ~ U{0..k-2}, between two query-delimiter rows (channel width + 1). The target is
// item q + 1. I = width + 2, Tin = max_items * (item_len + 1) + item_len + 2,
// O = width, Tout = item_len. Graves: width 6, item_len 3, 2..6 items.
struct AssocRecallConfig {
  int64_t width = 6;
  int64_t item_len = 3;
  int64_t min_items = 2;
  int64_t max_items = 6;
};

// Priority sort (4.5): in_n random vectors of `width` bits, each with a priority
// p ~ U[-1, 1) in channel width, then a delimiter row (channel width + 1). The target is the
// out_n vectors of highest priority, highest first (ties keep input order). I = width + 2,
// Tin = in_n + 1, O = width, Tout = out_n. Graves: width 8, 20 in, 16 out.
struct PrioritySortConfig {
  int64_t width = 8;
  int64_t in_n = 20;
  int64_t out_n = 16;
};

// Each throws ConfigError on an inconsistent configuration (naming the field) and draws the
// three splits with the policy of splits.hpp.
Splits<SequenceSplit> make_copy(const CopyConfig& cfg, const SplitSizes& sizes, uint64_t seed);
Splits<SequenceSplit> make_repeat_copy(const RepeatCopyConfig& cfg, const SplitSizes& sizes, uint64_t seed);
Splits<SequenceSplit> make_assoc_recall(const AssocRecallConfig& cfg, const SplitSizes& sizes, uint64_t seed);
Splits<SequenceSplit> make_priority_sort(const PrioritySortConfig& cfg, const SplitSizes& sizes, uint64_t seed);

// Writes /<split>/{inputs, input_len, targets, target_len} for the three splits.
void write_splits(io::File& file, const Splits<SequenceSplit>& splits);

}  // namespace attn::datasets

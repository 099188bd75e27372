// Length-bucketed batching by token budget (as fairseq's --max-tokens), and padding of the
// selected sequences into int32 tensors.
//
// Batches of similar lengths waste little compute on padding; a budget in tokens rather than
// in sentences keeps the memory of a step about constant whatever the lengths. One epoch's
// plan is a pure function of (lengths, options, seed, epoch):
//   1. every example i gets a random key from Rng(seed).fork(epoch); examples are sorted by
//      (length, key), so equal lengths are shuffled differently each epoch;
//   2. the sorted list is cut greedily into batches: an example joins the current batch while
//      (batch size + 1) × (its length) <= max_tokens (and the size stays <= max_batch when set).
//      Since lengths only grow along the list, its length is the batch's padded length Lmax, so
//      every batch satisfies B × Lmax <= max_tokens;
//   3. the order of the batches is shuffled (Fisher-Yates with the same stream).
// Every example occurs in exactly one batch per epoch. An example longer than max_tokens could
// never fit: make_batches throws ConfigError naming it rather than dropping it silently.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/data/rows.hpp"

namespace attn::data {

struct BatchingOptions {
  int64_t max_tokens = 4096;   // B × Lmax per batch, padding included (> 0)
  int64_t max_batch = 0;       // at most this many examples per batch; 0: no limit
  bool shuffle = true;         // false: no key shuffle within lengths and batches in length order
  uint64_t seed = 1;
};

// The batches of one epoch, each a list of example indices into `lengths` (in the order of
// step 1). lengths: [N], each >= 1 (for a translation pair, the larger of its source and target
// lengths: pair_lengths). Throws ConfigError on bad options or an example over the budget.
std::vector<std::vector<int64_t>> make_batches(std::span<const int32_t> lengths,
                                               const BatchingOptions& opts, int64_t epoch);

// max(src_len[i], tgt_len[i]): the length that bounds a pair's padded size on either side.
// src_len, tgt_len: int32 [N].
std::vector<int32_t> pair_lengths(const Tensor& src_len, const Tensor& tgt_len);

struct PaddedBatch {
  Tensor tokens;    // int32 [B, Lmax], 0 (PAD) after each row's length
  Tensor lengths;   // int32 [B]
};

// Rows `index` of a padded data set (in memory or in its file), re-padded to the longest selected
// row. seqs: int32 [N, S] (or [N, T])   lengths: int32 [N], each in [0, S]   -> tokens [B, Lmax],
// lengths [B].
// Throws ShapeError on mismatched shapes, DataError on an index or length out of range.
PaddedBatch gather_batch(const Rows& seqs, const Tensor& lengths, std::span<const int64_t> index);

// Variable-length sequences into one padded tensor: tokens [N, Lmax] (Lmax = the longest, or
// `min_len` when larger), lengths [N].
PaddedBatch pad_sequences(const std::vector<std::vector<int32_t>>& seqs, int64_t min_len = 0);

}  // namespace attn::data

// Running a model over a whole split in batches and putting per-example outputs back in split
// order: the part of every family's eval, translate and run verbs that is not about the family.
//
// A family's batch function returns, for the B examples of `index`, named tensors [B, ...] whose
// trailing axes may differ from batch to batch (sequence lengths); run_split gathers each name
// into one [N, ...] float32 tensor in split order, every trailing axis the largest any batch had
// (at least 1) and zero beyond an example's own extent. Per-example results that are not tensors (token lists,
// scores) the batch function writes straight into the caller's vectors at `index`.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn::train {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Throws DataError naming the file and the split when it holds no examples: an evaluation of
// nothing would print NaN metrics as if they were results. Every family's eval, translate and run
// verbs read their split through a reader that calls this (train::read_model_split,
// read_memnet_split, read_ntm_split).
void require_examples(int64_t count, const std::string& file, const std::string& split);

// The batches of a split, in order, without shuffling: batch_size > 0 gives runs of batch_size
// consecutive examples; otherwise batches of about max_tokens tokens (B x Lmax) of similar
// lengths (data::make_batches in length order).
std::vector<std::vector<int64_t>> split_batches(std::span<const int32_t> lengths, int64_t max_tokens,
                                                int64_t batch_size = 0);

// Calls run(batch) for every batch and gathers the tensors it returns, by name (in first-seen
// order), into [n, ...] tensors in split order (see above). Every batch must return tensors of
// the same rank under a name, each with the batch's size as its leading axis (ShapeError).
NamedTensors run_split(int64_t n, const std::vector<std::vector<int64_t>>& batches,
                       const std::function<NamedTensors(std::span<const int64_t> index)>& run);

}  // namespace attn::train

// Running a model over a whole split in batches and putting per-example outputs back in split
// order: the part of every family's eval, translate and run verbs that is not about the family.
//
// A family's batch function returns, for the B examples of `index`, named tensors [B, ...]
// (float32 or int32) whose trailing axes may differ from batch to batch (sequence lengths), and
// sums (loss, counts). run_split gathers each name into one [N, ...] tensor in split order, every
// trailing axis the largest any batch had (at least 1) and zero beyond an example's own extent,
// and adds the sums over the batches in batch order.
//
// On several ranks (dist::world(), a tool under mpirun) batch k runs on rank k mod N, and every
// rank gets the whole result: each rank's batches travel to all (dist::allgather) and are put
// together as one process would, from the same batches computed the same way, so the tensors
// are the same bits and the sums the same additions in the same order. A verb that runs under
// mpirun writes and prints on rank 0 alone (cli::write_output, cli::print_summary).
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/dist/communicator.hpp"

namespace attn::train {

// Throws DataError naming the file and the split when it holds no examples: an evaluation of
// nothing would print NaN metrics as if they were results. Every family's eval, translate and run
// verbs read their split through a reader that calls this (train::read_model_split,
// read_memnet_split, read_ntm_split, read_captioner_split, read_classifier_split). An empty
// /train is refused before, by the split readers themselves (data::check_split_rows).
void require_examples(int64_t count, const std::string& file, const std::string& split);

// The batches of a split, in order, without shuffling: batch_size > 0 gives runs of batch_size
// consecutive examples; otherwise batches of about max_tokens tokens (B x Lmax) of similar
// lengths (data::make_batches in length order).
std::vector<std::vector<int64_t>> split_batches(std::span<const int32_t> lengths, int64_t max_tokens,
                                                int64_t batch_size = 0);

// What one batch gives (above).
struct BatchOutput {
  NamedTensors tensors;       // [B, ...] each
  std::vector<double> sums;   // any length; a batch's missing entries count as 0
};

// The whole split's: tensors [n, ...] by name in first-seen order, sums over the batches.
struct SplitOutput {
  NamedTensors tensors;
  std::vector<double> sums;
  const Tensor& at(const std::string& name) const;   // ConfigError when no batch gave it
};

// Per-example token lists (generated sentences, captions) and their scores as a batch's tensors
// "tokens" [B, Lmax] (int32, padded), "lengths" [B] and "scores" [B], and back from the split's.
void add_token_lists(BatchOutput& out, const std::vector<std::vector<int32_t>>& tokens, const std::vector<float>& scores);
void read_token_lists(const SplitOutput& all, int64_t n, std::vector<std::vector<int32_t>>& tokens,
                      std::vector<float>& scores);

// Calls run(batch) for every batch (on `comm`'s ranks: see above) and gathers what it returns.
// Every batch must return tensors of the same rank and type under a name, each with the batch's
// size as its leading axis (ShapeError).
SplitOutput run_split(int64_t n, const std::vector<std::vector<int64_t>>& batches,
                      const std::function<BatchOutput(std::span<const int64_t> index)>& run);
SplitOutput run_split(int64_t n, const std::vector<std::vector<int64_t>>& batches,
                      const std::function<BatchOutput(std::span<const int64_t> index)>& run, dist::Communicator& comm);

}  // namespace attn::train

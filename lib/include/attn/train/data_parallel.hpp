// Data-parallel training: the trainer's step (trainer.hpp) spread over the ranks of a
// dist::Communicator, giving the update one process would make on the same global batch.
//
// Every rank holds the whole model and the same parameters, and plans the same global batches
// (epoch plans depend on the seed and the epoch, never on the number of ranks N). Of each global
// batch, rank r trains on rows r, r + N, r + 2N, ... (shard_of). Strided rather than contiguous:
// a batch is cut from examples sorted by length (data/batching.hpp), so a contiguous slice would
// give rank 0 the shortest rows and rank N-1 the longest, while strided shards differ by at most
// one example, hold a share of every length, and so do about the same work.
//
// The step. A task's train_batch adds the gradient of its mean loss over the rows it is given,
// g_r = d(L_r / c_r) for rank r's loss sum L_r over c_r counted units (tokens, sequences). The
// global batch's gradient is d(L / C) = sum_r (c_r / C) g_r with C = sum_r c_r. So each rank
//   1. runs train_batch on its shard (a rank with an empty shard, in a batch of fewer than N rows,
//      contributes nothing);
//   2. gathers every rank's BatchStats (a few doubles, dist::allgather) and sums them in rank
//      order: every rank gets the global batch's sums, the same bits;
//   3. scales its gradients by c_r / C and sums them over the ranks with dist::allreduce_sum (a
//      ring whose float sums have a fixed order), in buckets of kBucketFloats floats so that the
//      staging buffer stays small.
// Clipping, the divergence check and the optimizer step then run on every rank on identical
// gradients, so the ranks' parameters stay identical without being sent (fit checks it, by a hash
// of every parameter, at its start and end). One rank (N = 1) skips steps 2 and 3: it is the
// single-process trainer, bit for bit.
//
// Why not overlapped with the backward pass (PyTorch DDP's buckets as they become ready): a task's
// train_batch runs forward and backward as one call, and the models write each parameter's
// gradient in several places of their backward (a shared embedding, a recurrent weight summed over
// steps), so no family can say when a gradient is final without a per-model hook. The exchange
// runs after the backward; its time is reported (TrainResult::comm_seconds) rather than hidden.
//
// Random streams: rank 0 draws from the trainer's stream itself, rank r > 0 from the stream
// trainer.fork(kRankStreamLabel + r) positioned at the trainer's counter; after the step, every
// rank moves the trainer's counter to the furthest any rank drew. Checkpoints therefore hold one
// stream whatever N is, and a run resumed with another N continues from it. With dropout or
// masking, N ranks draw other numbers than one process does for the same rows, so such runs agree
// with one process in distribution, not in bits; without randomness they agree to float round-off
// (the shards' sums are associated differently).
//
// Validation (evaluate): batch k of the split runs on rank k mod N, and the per-batch sums are
// gathered and added in batch order: the same batches and the same additions as one process, so
// the validation sums are bit-identical to a single process's for any N.
//
// A task whose gradient is not that of loss_sum / count over its rows (a mixture of means over
// different counts), or whose forward depends on the whole batch (batch normalisation), sets
// TrainTask::single_process_only, and fit refuses to run it on several ranks (ConfigError).
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/dist/communicator.hpp"
#include "attn/nn/param.hpp"
#include "attn/train/trainer.hpp"

namespace attn::train {

// Floats per bucket of the gradient exchange (16 MiB).
inline constexpr int64_t kBucketFloats = int64_t{1} << 22;
// Rank r > 0 draws from trainer_stream.fork(kRankStreamLabel + r).
inline constexpr uint64_t kRankStreamLabel = 0x72616e6b00000000ull;   // "rank"

// Rows rank, rank + ranks, ... of `batch` (empty when the batch has no more than `rank` rows).
std::vector<int64_t> shard_of(std::span<const int64_t> batch, int rank, int ranks);

class DataParallel {
 public:
  // Plans the buckets over task.params (in their order). ConfigError when the communicator has
  // several ranks and the task is single_process_only.
  DataParallel(dist::Communicator& comm, const TrainTask& task);

  int rank() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  bool is_root() const { return comm_.is_root(); }

  // One global batch (steps 1-3 above): ADDS the global batch's gradient into task.params' grads
  // (zeroed by the caller) and returns the global batch's sums; `rng` is the trainer's stream.
  BatchStats train_batch(std::span<const int64_t> batch, Rng& rng);

  // train::evaluate (trainer.hpp) with the batches spread over the ranks, bit-identical to it.
  BatchStats evaluate(const std::function<BatchStats(std::span<const int64_t>)>& run_batch,
                      std::span<const int32_t> lengths, int64_t max_tokens, int64_t batch_size);

  // Throws attn::Error when some rank's parameters (trained and frozen) differ from rank 0's;
  // `when` says at which point ("after resuming").
  void check_same_params(const std::string& when);

  // Returns once every rank has called it (after rank 0 has written the final model).
  void barrier();

  // Wall time this rank spent exchanging sums and gradients in train_batch (packing and waiting
  // for slower ranks included), and the bytes it sent there.
  double comm_seconds() const { return comm_seconds_; }
  int64_t comm_bytes() const { return comm_bytes_; }

 private:
  dist::Communicator& comm_;
  const TrainTask& task_;
  std::vector<std::vector<Param*>> buckets_;   // consecutive params, each bucket ~kBucketFloats
  std::vector<float> staging_;                 // a bucket of several params, packed
  double comm_seconds_ = 0;
  int64_t comm_bytes_ = 0;

  BatchStats reduce_stats(const BatchStats& mine, Rng& trainer_rng, const Rng& used);
  void reduce_gradients(float weight);
};

}  // namespace attn::train

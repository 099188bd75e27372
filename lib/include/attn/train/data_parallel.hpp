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
// global batch's gradient is d(L / C) = (1 / C) sum_r c_r g_r with C = sum_r c_r. So each rank
//   1. runs train_batch on its shard (a rank with an empty shard, in a batch of fewer than N rows,
//      contributes nothing);
//   2. sums c_r over the ranks into C (a ring of one double: counts are integers, exact), and
//      c_r g_r with dist::RingAllreduce (a ring whose float sums have a fixed order), bucket by
//      bucket, each bucket's sum times 1 / C becoming the gradient;
//   3. gathers every rank's BatchStats (a few doubles, dist::allgather) and sums them in rank
//      order: every rank gets the global batch's sums, the same bits.
// Clipping, the divergence check and the optimizer step then run on every rank on identical
// gradients, so the ranks' parameters stay identical without being sent (fit checks it, by a hash
// of every parameter, at its start and end). One rank (N = 1) skips steps 2 and 3: it is the
// single-process trainer, bit for bit.
//
// Overlap with the backward pass (PyTorch DDP's buckets). Buckets of at most kBucketFloats floats
// are planned over the parameters in reverse order (a backward reaches the last layers first),
// one module each (a parameter path's first three components: its gradients are final together),
// and an embedding table (Param::sparse_rows) sends only the rows some rank uses: the rows it
// announced (nn/grad_ready.hpp), or else its non-zero rows. Announced rows are known at the
// forward, so the ring that sums which rows the ranks use starts with the backward (at the loss
// count) and is done before the table's gradient is final; otherwise it starts then.
// While the shard's train_batch runs, DataParallel listens to the model's announcements
// (nn/grad_ready.hpp): c_r once the loss is known (its ring starts), then which gradients are
// final. A bucket whose gradients are all final is scaled by c_r and its ring started at once;
// every announcement, and every matrix product of the backward (core/background.hpp), advances the
// rings in flight and writes back the buckets whose sums are complete, so the exchange proceeds
// while the backward computes the layers below. When train_batch returns, the buckets nobody
// announced (those of a model that does not announce; the first layer's, final only at the end)
// start, and every ring is finished. A ring does the same additions whenever its steps run, so
// the overlap changes the timing, never the bits (tests/dist: the same gradients with the overlap
// on and off, for every Transformer architecture and seq2seq).
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
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/core/background.hpp"
#include "attn/core/rng.hpp"
#include "attn/dist/communicator.hpp"
#include "attn/nn/grad_ready.hpp"
#include "attn/nn/param.hpp"
#include "attn/train/trainer.hpp"

namespace attn::train {

// Floats per bucket of the gradient exchange (4 MiB: about one layer of a Transformer with
// d_model 256, so that a layer's bucket can start as soon as the backward has passed it).
inline constexpr int64_t kBucketFloats = int64_t{1} << 20;
// Rank r > 0 draws from trainer_stream.fork(kRankStreamLabel + r).
inline constexpr uint64_t kRankStreamLabel = 0x72616e6b00000000ull;   // "rank"

// Rows rank, rank + ranks, ... of `batch` (empty when the batch has no more than `rank` rows).
std::vector<int64_t> shard_of(std::span<const int64_t> batch, int rank, int ranks);

class DataParallel final : private nn::GradListener, private BackgroundWork {
 public:
  // Plans the buckets over task.params, of about `bucket_floats` floats each. ConfigError when
  // the communicator has several ranks and the task is single_process_only.
  DataParallel(dist::Communicator& comm, const TrainTask& task, int64_t bucket_floats = kBucketFloats);

  int rank() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  bool is_root() const { return comm_.is_root(); }

  // Whether buckets start as the backward announces them (the default) or all after it: the same
  // bits either way; off is for measuring what the overlap hides.
  void set_overlap(bool on) { overlap_ = on; }

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

  // Communication in train_batch so far. comm_seconds: wall time from the end of this rank's
  // backward until the batch's gradients were summed, the exchange the backward did not hide (the
  // sums' gather, the rings still running, waiting for slower ranks). overlapped_seconds: time
  // spent inside the backward starting and advancing rings. buckets_overlapped: buckets started
  // inside the backward. comm_bytes: bytes sent.
  double comm_seconds() const { return comm_seconds_; }
  double overlapped_seconds() const { return overlapped_seconds_; }
  int64_t buckets_overlapped() const { return buckets_overlapped_; }
  int64_t comm_bytes() const { return comm_bytes_; }
  size_t buckets() const { return buckets_.size(); }
  // When this rank's last train_batch ended its backward and when its gradients were summed
  // (steady_clock seconds: comparable across the ranks of one machine). The latest summed minus
  // the latest backward end is the exchange no backward hid, waiting for a slower rank excluded.
  double backward_end() const { return backward_end_; }
  double summed() const { return summed_; }

 private:
  struct Bucket {
    std::vector<Param*> params;                         // consecutive, in reverse order
    size_t ready = 0;                                   // how many are final in this step
    std::vector<float> staging;                         // several params, packed (one: in place)
    std::unique_ptr<dist::RingAllreduce<float>> ring;   // started in this step
    std::vector<float> scratch;                         // the ring's, kept from step to step
    bool done = false;                                  // the sum is in the gradients
    bool started = false;                               // final, and scaled by c_r
    // One param with sparse_rows: first the ring sums a mask of the rows any rank uses (`rows`, 1
    // per row: the rows announced in this step, or else the non-zero ones), then, once the
    // gradient is final, those rows, packed into staging.
    bool sparse = false;
    std::vector<float> rows;
    bool rows_announced = false;
    bool sending_rows = false;
  };
  struct Slot {
    size_t bucket = 0;
    bool ready = false;
  };
  dist::Communicator& comm_;
  const TrainTask& task_;
  std::vector<Bucket> buckets_;
  std::unordered_map<const Param*, Slot> slots_;
  bool overlap_ = true;
  double weight_ = 0;                                         // c_r
  double count_sum_[1] = {0};                                 // c_r, then C once its ring is done
  std::unique_ptr<dist::RingAllreduce<double>> count_ring_;   // started once c_r is known
  double comm_seconds_ = 0, overlapped_seconds_ = 0, backward_end_ = 0, summed_ = 0;
  int64_t buckets_overlapped_ = 0, comm_bytes_ = 0;

  void plan_buckets(const std::vector<std::vector<Param*>>& groups, int64_t cap);
  void loss_count(double count) override;
  void final(std::span<Param* const> params) override;
  void rows(const Param& table, const Tensor& ids) override;
  void poll() override;
  void start_count(double count);
  void start(Bucket& bucket, size_t index);
  void start_mask(Bucket& bucket, size_t index);
  bool advance(Bucket& bucket);
  void write_back(Bucket& bucket, float inverse);
  bool progress();
  void finish();
  BatchStats reduce_stats(const BatchStats& mine, Rng& trainer_rng, const Rng& used);
};

}  // namespace attn::train

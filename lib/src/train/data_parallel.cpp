// The trainer's step on several ranks: shards, the exchange of sums and gradients, validation
// spread over the ranks (data_parallel.hpp).
#include "attn/train/data_parallel.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <optional>

#include "attn/core/error.hpp"
#include "attn/train/split_run.hpp"

namespace attn::train {
namespace {

using clock = std::chrono::steady_clock;

double seconds_since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }

// A BatchStats as doubles: loss_sum, count, units, then `sums` entries (units are exact below
// 2^53).
void encode(const BatchStats& s, size_t sums, std::vector<double>& out) {
  out.push_back(s.loss_sum);
  out.push_back(s.count);
  out.push_back(static_cast<double>(s.units));
  for (size_t k = 0; k < sums; ++k) out.push_back(s.sum(k));
}
BatchStats decode(const double* v, size_t sums) {
  BatchStats s{.loss_sum = v[0], .count = v[1], .units = static_cast<int64_t>(v[2]), .sums = {}};
  s.sums.assign(v + 3, v + 3 + sums);
  return s;
}

// 64-bit hash of a tensor's bits, word by word.
uint64_t hash_bits(const Tensor& t, uint64_t h) {
  const auto bytes = static_cast<size_t>(t.numel()) * 4;
  const auto* p = reinterpret_cast<const unsigned char*>(t.dtype() == DType::i32 ? static_cast<const void*>(t.idata())
                                                                                 : static_cast<const void*>(t.data()));
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (std::rotl(h, 5) ^ w) * 0x9E3779B97F4A7C15ull;
  }
  for (; i < bytes; ++i) h = (std::rotl(h, 5) ^ p[i]) * 0x9E3779B97F4A7C15ull;
  return h;
}

}  // namespace

std::vector<int64_t> shard_of(std::span<const int64_t> batch, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw ConfigError("shard_of: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  std::vector<int64_t> out;
  for (size_t i = static_cast<size_t>(rank); i < batch.size(); i += static_cast<size_t>(ranks)) out.push_back(batch[i]);
  return out;
}

DataParallel::DataParallel(dist::Communicator& comm, const TrainTask& task, int64_t bucket_floats)
    : comm_(comm), task_(task) {
  if (comm_.size() > 1 && !task.single_process_only.empty())
    throw ConfigError("train: this model trains as one process only, not on " + std::to_string(comm_.size()) +
                      " ranks: " + task.single_process_only);
  // Reverse order, as a backward makes them final; tags 1..kMaxTag - 1 (kMaxTag is the count's).
  int64_t total = 0;
  for (const Param* p : task.params) total += p->grad.numel();
  const int64_t most = dist::kMaxTag - 1;
  const int64_t cap = std::max({int64_t{1}, bucket_floats, (total + most - 1) / most});
  int64_t filled = cap;
  for (auto it = task.params.rbegin(); it != task.params.rend(); ++it) {
    Param* p = *it;
    if (filled + p->grad.numel() > cap && filled > 0) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().params.push_back(p);
    filled += p->grad.numel();
    slots_[p] = Slot{.bucket = buckets_.size() - 1};
  }
  for (Bucket& b : buckets_)
    if (b.params.size() > 1) {
      size_t n = 0;
      for (const Param* p : b.params) n += static_cast<size_t>(p->grad.numel());
      b.staging.resize(n);
    }
}

BatchStats DataParallel::train_batch(std::span<const int64_t> batch, Rng& rng) {
  const int N = comm_.size(), r = comm_.rank();
  if (N == 1) return task_.train_batch(batch, rng);

  const std::vector<int64_t> shard = shard_of(batch, r, N);
  Rng own(RngState{rng.fork(kRankStreamLabel + static_cast<uint64_t>(r)).state().seed, rng.state().counter});
  Rng& stream = r == 0 ? rng : own;
  const int64_t bytes0 = comm_.traffic().bytes_sent;
  BatchStats mine;
  if (!shard.empty()) {
    std::optional<nn::ScopedGradListener> listening;
    std::optional<ScopedBackgroundWork> polled;
    if (overlap_) {
      listening.emplace(static_cast<nn::GradListener&>(*this));
      polled.emplace(static_cast<BackgroundWork&>(*this));
    }
    mine = task_.train_batch(shard, stream);
  }
  const auto t0 = clock::now();
  if (!count_ring_) {
    start_count(mine.count);
  } else if (weight_ != mine.count) {
    throw Error("train: the model announced a loss over " + std::to_string(weight_) + " units but its step counted " +
                std::to_string(mine.count) + " (nn::announce_loss_count in its training step is wrong)");
  }
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (!buckets_[b].ring) start(buckets_[b], b);
  finish();
  const BatchStats global = reduce_stats(mine, rng, stream);
  if (global.count != count_sum_[0])   // integers, exact in any order
    throw Error("train: the ranks' counts sum to " + std::to_string(count_sum_[0]) + " in the ring but " +
                std::to_string(global.count) + " in the gathered sums");
  comm_seconds_ += seconds_since(t0);
  comm_bytes_ += comm_.traffic().bytes_sent - bytes0;
  backward_end_ = std::chrono::duration<double>(t0.time_since_epoch()).count();
  summed_ = std::chrono::duration<double>(clock::now().time_since_epoch()).count();
  return global;
}

void DataParallel::loss_count(double count) {
  start_count(count);
  for (size_t b = 0; b < buckets_.size(); ++b)   // final before the count was known
    if (!buckets_[b].ring && buckets_[b].ready == buckets_[b].params.size()) {
      start(buckets_[b], b);
      ++buckets_overlapped_;
    }
}

void DataParallel::final(std::span<Param* const> params) {
  const auto t0 = clock::now();
  for (Param* p : params) {
    const auto it = slots_.find(p);
    if (it == slots_.end() || it->second.ready) continue;   // frozen, or said before
    it->second.ready = true;
    Bucket& b = buckets_[it->second.bucket];
    if (++b.ready == b.params.size() && count_ring_) {
      start(b, it->second.bucket);
      ++buckets_overlapped_;
    }
  }
  progress();
  overlapped_seconds_ += seconds_since(t0);
}

void DataParallel::poll() {
  const auto t0 = clock::now();
  progress();
  overlapped_seconds_ += seconds_since(t0);
}

// Starts summing c_r into C (a ring of one double, tag kMaxTag: the buckets have 1..kMaxTag-1).
void DataParallel::start_count(double count) {
  weight_ = count_sum_[0] = count;
  count_ring_ = std::make_unique<dist::RingAllreduce<double>>(comm_, std::span<double>(count_sum_), dist::kMaxTag);
}

// Scales the bucket's gradients by c_r (into its staging, or in place) and starts its ring.
void DataParallel::start(Bucket& bucket, size_t index) {
  const auto w = static_cast<float>(weight_);
  std::span<float> data;
  if (bucket.staging.empty()) {
    data = bucket.params.front()->grad.values();
    for (float& x : data) x *= w;
  } else {
    size_t at = 0;
    for (const Param* p : bucket.params) {
      const std::span<const float> g = p->grad.values();
      for (size_t i = 0; i < g.size(); ++i) bucket.staging[at + i] = w * g[i];
      at += g.size();
    }
    data = bucket.staging;
  }
  bucket.ring = std::make_unique<dist::RingAllreduce<float>>(comm_, data, 1 + static_cast<int>(index));
}

// Advances the count's ring and the buckets'; a bucket whose sum is complete, once C is known,
// becomes the gradient: d(L / C) = (1 / C) sum_r c_r d(L_r / c_r) (nothing counted anywhere: no
// gradient). Returns whether every bucket is done.
bool DataParallel::progress() {
  if (!count_ring_ || !count_ring_->progress()) return false;
  const float inverse = count_sum_[0] > 0 ? static_cast<float>(1.0 / count_sum_[0]) : 0.0f;
  bool all = true;
  for (Bucket& b : buckets_) {
    if (b.done) continue;
    if (!b.ring || !b.ring->progress()) {
      all = false;
      continue;
    }
    if (b.staging.empty()) {
      for (float& x : b.params.front()->grad.values()) x *= inverse;
    } else {
      size_t at = 0;
      for (Param* p : b.params) {
        const std::span<float> g = p->grad.values();
        for (size_t i = 0; i < g.size(); ++i) g[i] = b.staging[at + i] * inverse;
        at += g.size();
      }
    }
    b.done = true;
  }
  return all;
}

// Waits until every bucket is done, then readies them for the next step.
void DataParallel::finish() {
  {
    dist::Waiter waiter(comm_);
    while (!progress()) {
      if (!count_ring_->progress()) {
        count_ring_->pause(waiter);
        continue;
      }
      for (const Bucket& b : buckets_)
        if (!b.done) {
          b.ring->pause(waiter);
          break;
        }
    }
  }
  for (Bucket& b : buckets_) {
    b.ring.reset();
    b.ready = 0;
    b.done = false;
    for (Param* p : b.params) slots_[p].ready = false;
  }
  count_ring_.reset();
}

BatchStats DataParallel::reduce_stats(const BatchStats& mine, Rng& trainer_rng, const Rng& used) {
  const size_t k = task_.sums.size();
  std::vector<double> packed;
  encode(mine, k, packed);
  packed.push_back(std::bit_cast<double>(used.state().counter));
  const size_t width = packed.size();
  const std::vector<double> all = dist::allgather(comm_, packed);
  BatchStats global;
  uint64_t counter = trainer_rng.state().counter;
  for (int q = 0; q < comm_.size(); ++q) {   // rank order: the same additions on every rank
    const double* v = all.data() + static_cast<size_t>(q) * width;
    global += decode(v, k);
    counter = std::max(counter, std::bit_cast<uint64_t>(v[width - 1]));
  }
  trainer_rng.set_state({trainer_rng.state().seed, counter});
  return global;
}

BatchStats DataParallel::evaluate(const std::function<BatchStats(std::span<const int64_t>)>& run_batch,
                                  std::span<const int32_t> lengths, int64_t max_tokens, int64_t batch_size) {
  const int N = comm_.size(), r = comm_.rank();
  if (N == 1) return train::evaluate(run_batch, lengths, max_tokens, batch_size);
  const std::vector<std::vector<int64_t>> batches = split_batches(lengths, max_tokens, batch_size);
  const size_t k = task_.sums.size(), width = 3 + k;
  std::vector<double> mine;
  mine.reserve(batches.size() * width);
  for (size_t b = 0; b < batches.size(); ++b) {
    const BatchStats s = static_cast<int>(b % static_cast<size_t>(N)) == r ? run_batch(batches[b]) : BatchStats{};
    encode(s, k, mine);
  }
  const std::vector<double> all = dist::allgather(comm_, mine);
  BatchStats total;   // batch order, each batch's sums from the rank that ran it: evaluate()'s additions
  for (size_t b = 0; b < batches.size(); ++b) {
    const size_t owner = b % static_cast<size_t>(N);
    total += decode(all.data() + owner * mine.size() + b * width, k);
  }
  return total;
}

void DataParallel::check_same_params(const std::string& when) {
  if (comm_.size() == 1) return;
  uint64_t h = 0x6174746e6c6162ull;   // "attnlab"
  for (const ParamList* list : {&task_.params, &task_.frozen})
    for (const Param* p : *list) h = hash_bits(p->value, h);
  const double mine = std::bit_cast<double>(h);
  const std::vector<double> all = dist::allgather(comm_, std::span<const double>(&mine, 1));
  for (int q = 1; q < comm_.size(); ++q)
    if (std::bit_cast<uint64_t>(all[static_cast<size_t>(q)]) != std::bit_cast<uint64_t>(all[0]))
      throw Error("train: rank " + std::to_string(q) + "'s parameters differ from rank 0's " + when +
                  " (the ranks must start from the same model and data and run the same build)");
}

void DataParallel::barrier() {
  if (comm_.size() == 1) return;
  const double nothing = 0;
  dist::allgather(comm_, std::span<const double>(&nothing, 1));
}

}  // namespace attn::train

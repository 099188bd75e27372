// The trainer's step on several ranks: shards, the exchange of sums and gradients, validation
// spread over the ranks (data_parallel.hpp).
#include "attn/train/data_parallel.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

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

DataParallel::DataParallel(dist::Communicator& comm, const TrainTask& task) : comm_(comm), task_(task) {
  if (comm_.size() > 1 && !task.single_process_only.empty())
    throw ConfigError("train: this model trains as one process only, not on " + std::to_string(comm_.size()) +
                      " ranks: " + task.single_process_only);
  int64_t filled = kBucketFloats;
  for (Param* p : task.params) {
    if (filled + p->grad.numel() > kBucketFloats && filled > 0) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().push_back(p);
    filled += p->grad.numel();
  }
}

BatchStats DataParallel::train_batch(std::span<const int64_t> batch, Rng& rng) {
  const int N = comm_.size(), r = comm_.rank();
  if (N == 1) return task_.train_batch(batch, rng);

  const std::vector<int64_t> shard = shard_of(batch, r, N);
  Rng own(RngState{rng.fork(kRankStreamLabel + static_cast<uint64_t>(r)).state().seed, rng.state().counter});
  Rng& stream = r == 0 ? rng : own;
  BatchStats mine;
  if (!shard.empty()) mine = task_.train_batch(shard, stream);

  const auto t0 = clock::now();
  const int64_t bytes0 = comm_.traffic().bytes_sent;
  const BatchStats global = reduce_stats(mine, rng, stream);
  // d(L / C) = sum_r (c_r / C) d(L_r / c_r); nothing counted anywhere: no gradient to weigh.
  const double weight = global.count > 0 ? mine.count / global.count : 0.0;
  reduce_gradients(static_cast<float>(weight));
  comm_seconds_ += seconds_since(t0);
  comm_bytes_ += comm_.traffic().bytes_sent - bytes0;
  return global;
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

void DataParallel::reduce_gradients(float weight) {
  auto scale = [weight](std::span<float> g) {
    if (weight != 1.0f)
      for (float& x : g) x *= weight;
  };
  for (const std::vector<Param*>& bucket : buckets_) {
    if (bucket.size() == 1) {   // one large parameter: in place
      const std::span<float> g = bucket.front()->grad.values();
      scale(g);
      dist::allreduce_sum(comm_, g);
      continue;
    }
    size_t n = 0;
    for (const Param* p : bucket) n += static_cast<size_t>(p->grad.numel());
    staging_.resize(std::max(staging_.size(), n));
    size_t at = 0;
    for (const Param* p : bucket) {
      const std::span<const float> g = p->grad.values();
      for (size_t i = 0; i < g.size(); ++i) staging_[at + i] = weight * g[i];
      at += g.size();
    }
    dist::allreduce_sum(comm_, std::span<float>(staging_.data(), n));
    at = 0;
    for (Param* p : bucket) {
      const std::span<float> g = p->grad.values();
      std::copy_n(staging_.data() + at, g.size(), g.begin());
      at += g.size();
    }
  }
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

// The trainer's step on several ranks: shards, the exchange of sums and gradients, validation
// spread over the ranks (data_parallel.hpp).
#include "attn/train/data_parallel.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <optional>

#include "attn/core/error.hpp"

namespace attn::train {
namespace {

using clock = std::chrono::steady_clock;

double seconds_since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }

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

// The module a parameter belongs to, by its path (docs/FORMATS.md): its first three components
// ("encoder/layer1/ffn" of "encoder/layer1/ffn/out/W"), or all but the last when it has fewer
// ("src_embed" of "src_embed/table").
std::string module_of(const std::string& name) {
  size_t cut = std::string::npos;   // the third '/', or the last one before it
  for (size_t at = 0, k = 0; k < 3; ++k, ++at) {
    at = name.find('/', at);
    if (at == std::string::npos) break;
    cut = at;
  }
  return name.substr(0, cut);
}

// `params` in reverse order, cut where the module changes: a backward finishes a module's
// gradients together (models announce sublayers and layers, nn/grad_ready.hpp), so a bucket that
// holds one module only starts as soon as that module is done. A module of fewer than `tiny`
// floats (a LayerNorm) joins the one after it, which it is announced with, rather than costing a
// message of its own.
std::vector<std::vector<Param*>> module_groups(const ParamList& params, int64_t tiny) {
  std::vector<std::vector<Param*>> groups;
  std::string last;
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const std::string module = module_of((*it)->name);
    if (groups.empty() || module != last) groups.emplace_back();
    groups.back().push_back(*it);
    last = module;
  }
  std::vector<std::vector<Param*>> merged;
  std::vector<Param*> carry;   // tiny modules waiting for the next one
  for (std::vector<Param*>& g : groups) {
    carry.insert(carry.end(), g.begin(), g.end());
    int64_t floats = 0;
    for (const Param* p : carry) floats += p->grad.numel();
    if (floats >= tiny) {
      merged.push_back(std::move(carry));
      carry.clear();
    }
  }
  if (!carry.empty()) {
    if (merged.empty()) merged.emplace_back();
    merged.back().insert(merged.back().end(), carry.begin(), carry.end());
  }
  return merged;
}

// rows[r] = 1 where row r of `grad` [rows, width] is non-zero, else 0 (a row of -0 becomes +0, as
// the other ranks' unused rows are). A scan of the whole table (8 MB for 8,000 x 256) is a pass
// over memory at the end of the backward, which announced rows (nn/grad_ready.hpp) save
// (experiments/perf/mpi, "Measured").
void mark_nonzero_rows(Tensor& grad, std::vector<float>& rows) {
  const int64_t width = grad.dim(1);
  for (size_t r = 0; r < rows.size(); ++r) {
    float* row = grad.data() + static_cast<int64_t>(r) * width;
    uint32_t bits = 0;   // OR of the row's bits: branch-free, so the scan runs at memory speed
    for (int64_t k = 0; k < width; ++k) bits |= std::bit_cast<uint32_t>(row[k]);
    const bool used = (bits & 0x7fffffffu) != 0;   // not +-0 (NaN and Inf included)
    if (!used && bits != 0) std::fill(row, row + width, 0.0f);
    rows[r] = used ? 1.0f : 0.0f;
  }
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
  // A model of more modules than tags is planned by size alone, in buckets large enough that
  // two neighbours hold more than one (so at most kMaxTag - 1 of them).
  int64_t total = 0;
  for (const Param* p : task.params) total += p->grad.numel();
  const int64_t cap = std::max<int64_t>(1, bucket_floats), most = dist::kMaxTag - 1;
  plan_buckets(module_groups(task.params, cap / 64), cap);
  if (static_cast<int64_t>(buckets_.size()) > most) {
    ParamList reversed(task.params.rbegin(), task.params.rend());
    plan_buckets({reversed}, std::max(cap, 2 * ((total + most - 2) / (most - 1))));
  }
  for (Bucket& b : buckets_) {
    const Param& first = *b.params.front();
    if (b.params.size() == 1 && first.sparse_rows && first.grad.rank() == 2) {
      b.sparse = true;
      b.rows.resize(static_cast<size_t>(first.grad.dim(0)));
    } else if (b.params.size() > 1) {
      size_t n = 0;
      for (const Param* p : b.params) n += static_cast<size_t>(p->grad.numel());
      b.staging.resize(n);
    }
  }
}

// Buckets of at most `cap` floats (a larger parameter alone) over each group in turn.
void DataParallel::plan_buckets(const std::vector<std::vector<Param*>>& groups, int64_t cap) {
  buckets_.clear();
  slots_.clear();
  for (const std::vector<Param*>& group : groups) {
    int64_t filled = cap;
    for (Param* p : group) {
      if (filled + p->grad.numel() > cap && filled > 0) {
        buckets_.emplace_back();
        filled = 0;
      }
      buckets_.back().params.push_back(p);
      filled += p->grad.numel();
      slots_[p] = Slot{.bucket = buckets_.size() - 1};
    }
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
    if (!buckets_[b].started) start(buckets_[b], b);
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
  if (count_ring_)   // its ring is in flight over count_sum_: a second count would overwrite it
    throw Error("train: the model announced its loss count twice in one step (nn::announce_loss_count)");
  start_count(count);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    if (bucket.ready == bucket.params.size()) {   // final before the count was known
      start(bucket, b);
      ++buckets_overlapped_;
    } else if (bucket.sparse && bucket.rows_announced) {   // the forward is done: so are its rows
      start_mask(bucket, b);
    }
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

// Marks the rows of a sparse bucket's mask (replacing the scan of its gradient), or, once the
// mask's ring runs, checks that they are marked (the ring only adds to them: a marked row stays
// non-zero).
void DataParallel::rows(const Param& table, const Tensor& ids) {
  const auto it = slots_.find(const_cast<Param*>(&table));
  if (it == slots_.end()) return;   // frozen
  Bucket& b = buckets_[it->second.bucket];
  if (!b.sparse) return;
  if (b.started)
    throw Error("train: rows of " + table.name + " were announced after its gradient was final (nn::announce_rows)");
  if (!b.rows_announced) std::fill(b.rows.begin(), b.rows.end(), 0.0f);
  b.rows_announced = true;
  const int32_t* id = ids.idata();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (id[i] < 0 || static_cast<size_t>(id[i]) >= b.rows.size()) continue;
    float& row = b.rows[static_cast<size_t>(id[i])];
    if (!b.ring)
      row = 1.0f;
    else if (row == 0.0f)   // in flight: left as it is
      throw Error("train: row " + std::to_string(id[i]) + " of " + table.name +
                  " was announced after the forward (nn::announce_rows)");
  }
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

// Starts the ring that sums a sparse bucket's mask: the rows announced (the others were never added
// to, and are +0 as the caller zeroed them), or else the non-zero rows.
void DataParallel::start_mask(Bucket& bucket, size_t index) {
  if (!bucket.rows_announced) mark_nonzero_rows(bucket.params.front()->grad, bucket.rows);
  bucket.sending_rows = false;
  bucket.ring = std::make_unique<dist::RingAllreduce<float>>(comm_, std::span<float>(bucket.rows),
                                                             1 + static_cast<int>(index), &bucket.scratch);
}

// Scales the bucket's gradients by c_r (into its staging, or in place) and starts its ring; a
// sparse bucket's ring sums the mask of its rows first, if it has not begun (advance does the rest).
void DataParallel::start(Bucket& bucket, size_t index) {
  bucket.started = true;
  if (bucket.sparse) {
    if (!bucket.ring) start_mask(bucket, index);
    return;
  }
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
  bucket.ring = std::make_unique<dist::RingAllreduce<float>>(comm_, data, 1 + static_cast<int>(index), &bucket.scratch);
}

// Advances the bucket's ring; true once its sum is complete. A sparse bucket whose mask is summed
// and whose gradient is final packs the rows some rank uses, times c_r, and sums those under the
// same tag (the same rows on every rank, in order: deterministic like the rest).
bool DataParallel::advance(Bucket& bucket) {
  if (!bucket.ring->progress()) return false;
  if (!bucket.sparse || bucket.sending_rows) return true;
  if (!bucket.started) return false;
  const Tensor& g = bucket.params.front()->grad;
  const auto width = static_cast<size_t>(g.dim(1));
  const auto w = static_cast<float>(weight_);
  const auto used = static_cast<size_t>(std::ranges::count_if(bucket.rows, [](float r) { return r != 0.0f; }));
  bucket.staging.resize(used * width);   // its capacity stays from step to step
  float* to = bucket.staging.data();
  for (size_t r = 0; r < bucket.rows.size(); ++r)
    if (bucket.rows[r] != 0.0f) {
      const float* row = g.data() + r * width;
      for (size_t k = 0; k < width; ++k) to[k] = w * row[k];
      to += width;
    }
  bucket.sending_rows = true;
  const int tag = bucket.ring->tag();
  bucket.ring = std::make_unique<dist::RingAllreduce<float>>(comm_, std::span<float>(bucket.staging), tag,
                                                             &bucket.scratch);
  return bucket.ring->progress();
}

// The bucket's sum times `inverse` (1 / C) into its gradients (a sparse bucket's other rows are
// +0 on every rank already: start() saw to it).
void DataParallel::write_back(Bucket& bucket, float inverse) {
  if (bucket.sparse) {
    Tensor& g = bucket.params.front()->grad;
    const int64_t width = g.dim(1);
    const float* from = bucket.staging.data();
    for (size_t r = 0; r < bucket.rows.size(); ++r) {
      if (bucket.rows[r] == 0.0f) continue;
      float* row = g.data() + static_cast<int64_t>(r) * width;
      for (int64_t k = 0; k < width; ++k) row[k] = from[k] * inverse;
      from += width;
    }
  } else if (bucket.staging.empty()) {
    for (float& x : bucket.params.front()->grad.values()) x *= inverse;
  } else {
    size_t at = 0;
    for (Param* p : bucket.params) {
      const std::span<float> g = p->grad.values();
      for (size_t i = 0; i < g.size(); ++i) g[i] = bucket.staging[at + i] * inverse;
      at += g.size();
    }
  }
}

// Advances the count's ring and the buckets'; a bucket whose sum is complete, once C is known,
// becomes the gradient: d(L / C) = (1 / C) sum_r c_r d(L_r / c_r) (nothing counted anywhere: no
// gradient). Returns whether every bucket is done.
bool DataParallel::progress() {
  const bool counted = count_ring_ && count_ring_->progress();
  const float inverse = counted && count_sum_[0] > 0 ? static_cast<float>(1.0 / count_sum_[0]) : 0.0f;
  bool all = counted;
  for (Bucket& b : buckets_) {
    if (b.done) continue;
    if (!b.ring || !advance(b) || !counted) {
      all = false;
      continue;
    }
    write_back(b, inverse);
    b.done = true;
  }
  return all;
}

// Waits until every bucket is done, then readies them for the next step.
void DataParallel::finish() {
  {
    dist::Waiter waiter(comm_);
    while (!progress()) {   // name the count's ring while it runs, else the first bucket not done
      const auto open = std::find_if(buckets_.begin(), buckets_.end(), [](const Bucket& b) { return !b.done; });
      if (!count_ring_->progress() || open == buckets_.end()) count_ring_->pause(waiter);
      else open->ring->pause(waiter);
    }
  }
  for (Bucket& b : buckets_) {
    b.ring.reset();
    b.ready = 0;
    b.done = false;
    b.started = false;
    b.rows_announced = false;
  }
  for (auto& slot : slots_) slot.second.ready = false;
  count_ring_.reset();
}

BatchStats DataParallel::reduce_stats(const BatchStats& mine, Rng& trainer_rng, const Rng& used) {
  const size_t k = task_.sums.size();
  std::vector<double> packed;
  append_doubles(mine, k, packed);
  packed.push_back(std::bit_cast<double>(used.state().counter));
  const size_t width = packed.size();
  const std::vector<double> all = dist::allgather(comm_, packed);
  BatchStats global;
  uint64_t counter = trainer_rng.state().counter;
  for (int q = 0; q < comm_.size(); ++q) {   // rank order: the same additions on every rank
    const double* v = all.data() + static_cast<size_t>(q) * width;
    global += stats_from_doubles(std::span<const double>(v, 3 + k));
    counter = std::max(counter, std::bit_cast<uint64_t>(v[width - 1]));
  }
  trainer_rng.set_state({trainer_rng.state().seed, counter});
  return global;
}

BatchStats DataParallel::evaluate(const std::function<BatchStats(std::span<const int64_t>)>& run_batch,
                                  std::span<const int32_t> lengths, int64_t max_tokens, int64_t batch_size) {
  return train::evaluate(run_batch, lengths, max_tokens, batch_size, comm_);
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

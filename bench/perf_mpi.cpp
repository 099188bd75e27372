// Data-parallel training speed of the Transformer T-small (issue 18), the program behind
// experiments/perf/mpi: the T-small model and global batch of perf_transformer (64 pairs of
// length 24, 1536 target tokens a step, Adam), trained through train::DataParallel on the ranks
// of dist::world(): one process, or `mpirun -np N perf_mpi`.
//
// Every step is timed in three parts on every rank: the forward and backward of the rank's shard
// (compute; with the overlap, the rings it started and advanced inside the backward are part of
// it: overlapped_s), the exchange left after the backward (train::DataParallel::comm_seconds: the
// rings still running, the sums' gather, waiting for the slower rank: exchange_s), and Adam.
// exposed_s is the latest rank's summed gradients minus the latest rank's end of backward: the
// exchange no backward hid, the wait for the slowest rank excluded (one machine's clock). After
// the timed steps the whole dense gradient is all-reduced once more on its own, in buckets of
// --bucket-floats (not cut at modules, embeddings not as rows), the ranks lined up by a barrier
// first: the exchange's cost without overlap and without waiting.
// `--overlap 0` starts every bucket after the backward (DataParallel::set_overlap), for the
// comparison; `--bucket-floats` sets the bucket size. Rank 0 prints one key=value line:
//   impl=attnlab-mpi ranks=2 threads=1 overlap=1 tokens_per_s=... step_s=... compute_s=...
//   exchange_s=... exposed_s=... overlapped_s=... buckets=... buckets_overlapped=...
//   optimizer_s=... allreduce_s=... bytes_per_step=... grad_bytes=... params=... tokens=...
// (medians over the timed steps; compute_s is the slowest rank's; seconds per step), and
// cpu_s, the CPU time of a step summed over every rank and thread: on a machine shared with other
// work, tokens / cpu_s (cpu_tokens_per_s) compares the configurations by the work they cost
// rather than by the share of the cores they got.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "attn/core/threading.hpp"
#include "attn/dist/world.hpp"
#include "attn/families/transformer/model.hpp"
#include "attn/optim/adam.hpp"
#include "attn/train/data_parallel.hpp"
#include "perf_util.hpp"

using namespace attn;

namespace {

using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

// Rows `index` of a batch whose rows all have length L.
data::TokenBatch rows_of(const data::TokenBatch& all, std::span<const int64_t> index) {
  const int64_t L = all.src.dim(1), B = static_cast<int64_t>(index.size());
  data::TokenBatch out;
  out.src = Tensor({B, L}, DType::i32);
  out.tgt = Tensor({B, L}, DType::i32);
  out.src_len = Tensor({B}, DType::i32);
  out.tgt_len = Tensor({B}, DType::i32);
  for (int64_t b = 0; b < B; ++b) {
    std::memcpy(out.src.idata() + b * L, all.src.idata() + index[b] * L, static_cast<size_t>(L) * 4);
    std::memcpy(out.tgt.idata() + b * L, all.tgt.idata() + index[b] * L, static_cast<size_t>(L) * 4);
    out.src_len.idata()[b] = all.src_len.idata()[index[b]];
    out.tgt_len.idata()[b] = all.tgt_len.idata()[index[b]];
  }
  return out;
}

// The largest value over the ranks (the slowest rank's time).
double max_over_ranks(dist::Communicator& comm, double v) {
  const std::vector<double> all = dist::allgather(comm, std::span<const double>(&v, 1));
  return *std::max_element(all.begin(), all.end());
}

}  // namespace

int main(int argc, char** argv) {
  dist::Environment job;
  dist::Communicator& comm = dist::world();
  const perf::Args args(argc, argv,
                        {{"threads", "1"}, {"steps", "5"}, {"warmup", "2"}, {"batch", "64"}, {"length", "24"},
                         {"vocab", "8000"}, {"d-model", "256"}, {"heads", "4"}, {"d-ff", "1024"}, {"layers", "3"},
                         {"overlap", "1"}, {"bucket-floats", std::to_string(train::kBucketFloats)}});
  set_num_threads(static_cast<int>(args.integer("threads")));
  const int64_t B = args.integer("batch"), L = args.integer("length");
  transformer::TransformerConfig c;
  c.src_vocab = c.tgt_vocab = args.integer("vocab");
  c.d_model = args.integer("d-model");
  c.heads = args.integer("heads");
  c.d_ff = args.integer("d-ff");
  c.enc_layers = c.dec_layers = args.integer("layers");
  c.dropout = 0.1f;
  c.label_smoothing = 0.1f;
  Rng init(1);
  transformer::Transformer model(c, init);
  const data::TokenBatch all = perf::make_batch(B, L, c.tgt_vocab);
  std::vector<int64_t> global(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) global[static_cast<size_t>(i)] = i;

  train::TrainTask task;
  task.kind = "transformer";
  task.params = model.params();
  task.sums = {"nll", "correct"};
  task.train_batch = [&](std::span<const int64_t> index, Rng& rng) {
    const data::LossStats s = model.train_step(rows_of(all, index), rng);
    return train::BatchStats{.loss_sum = s.loss_sum, .count = static_cast<double>(s.tokens), .units = s.tokens,
                             .sums = {s.nll_sum, static_cast<double>(s.correct)}};
  };
  const int64_t bucket_floats = args.integer("bucket-floats");
  train::DataParallel dp(comm, task, bucket_floats);
  dp.set_overlap(args.integer("overlap") != 0);
  int64_t params = 0;
  for (const Param* p : task.params) params += p->value.numel();

  optim::Adam adam({.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f});
  Rng dropout(2);
  int64_t t = 0, tokens = 0;
  std::vector<double> step_s, compute_s, exchange_s, exposed_s, overlapped_s, optimizer_s, cpu_s;
  const int64_t warmup = args.integer("warmup"), steps = args.integer("steps");
  for (int64_t i = 0; i < warmup + steps; ++i) {
    zero_grads(task.params);
    const double comm0 = dp.comm_seconds(), overlapped0 = dp.overlapped_seconds(), cpu0 = bench::process_cpu_seconds();
    const auto t0 = clock_type::now();
    tokens = dp.train_batch(global, dropout).units;
    const double forward_backward = since(t0);
    const auto t1 = clock_type::now();
    adam.step(task.params, ++t);
    const double opt = since(t1), whole = since(t0), exchange = dp.comm_seconds() - comm0;
    const double cpu = bench::process_cpu_seconds() - cpu0;
    // Outside the timed step: the slowest rank's compute, every rank's CPU time.
    const double compute = max_over_ranks(comm, forward_backward - exchange);
    const std::vector<double> cpus = dist::allgather(comm, std::span<const double>(&cpu, 1));
    // The exchange left after the last rank's backward (a rank waiting for it is not exchanging).
    const double ends[2] = {dp.backward_end(), dp.summed()};
    const std::vector<double> all_ends = dist::allgather(comm, std::span<const double>(ends, 2));
    double last_backward = 0, last_summed = 0;
    for (size_t q = 0; q < all_ends.size(); q += 2) {
      last_backward = std::max(last_backward, all_ends[q]);
      last_summed = std::max(last_summed, all_ends[q + 1]);
    }
    if (i < warmup) continue;
    step_s.push_back(whole);
    compute_s.push_back(compute);
    exchange_s.push_back(exchange);
    exposed_s.push_back(comm.size() > 1 ? last_summed - last_backward : 0.0);
    overlapped_s.push_back(dp.overlapped_seconds() - overlapped0);
    optimizer_s.push_back(opt);
    double cpu_all = 0;
    for (const double c_r : cpus) cpu_all += c_r;
    cpu_s.push_back(cpu_all);
  }
  const int64_t bytes_per_step = steps > 0 ? dp.comm_bytes() / (warmup + steps) : 0;

  // The gradient all-reduce alone, ranks lined up first: its cost without waiting for a peer.
  // A flat copy of the gradients in buckets of --bucket-floats, without the packing, one after
  // the other.
  std::vector<float> flat;
  for (const Param* p : task.params) flat.insert(flat.end(), p->grad.values().begin(), p->grad.values().end());
  const auto bucket = static_cast<size_t>(std::max<int64_t>(1, bucket_floats));
  std::vector<double> allreduce_s;
  for (int k = 0; k < 3; ++k) {
    dp.barrier();
    const auto t0 = clock_type::now();
    for (size_t at = 0; at < flat.size(); at += bucket)
      dist::allreduce_sum(comm, std::span<float>(flat).subspan(at, std::min(flat.size() - at, bucket)));
    allreduce_s.push_back(max_over_ranks(comm, since(t0)));
  }
  for (std::vector<double>* v : {&step_s, &compute_s, &exchange_s, &exposed_s, &overlapped_s, &optimizer_s, &allreduce_s, &cpu_s})
    std::sort(v->begin(), v->end());
  if (comm.is_root())
    std::printf("impl=attnlab-mpi ranks=%d threads=%lld overlap=%lld tokens_per_s=%.1f step_s=%.4f min_s=%.4f "
                "max_s=%.4f compute_s=%.4f exchange_s=%.4f exposed_s=%.4f overlapped_s=%.4f buckets=%zu buckets_overlapped=%.1f "
                "optimizer_s=%.4f allreduce_s=%.4f cpu_s=%.4f cpu_tokens_per_s=%.1f "
                "bytes_per_step=%lld grad_bytes=%lld params=%lld tokens=%lld\n",
                comm.size(), static_cast<long long>(args.integer("threads")),
                static_cast<long long>(args.integer("overlap")), static_cast<double>(tokens) / perf::median(step_s),
                perf::median(step_s), step_s.front(), step_s.back(), perf::median(compute_s),
                perf::median(exchange_s), perf::median(exposed_s), perf::median(overlapped_s), dp.buckets(),
                static_cast<double>(dp.buckets_overlapped()) / static_cast<double>(warmup + steps), perf::median(optimizer_s),
                perf::median(allreduce_s), perf::median(cpu_s), static_cast<double>(tokens) / perf::median(cpu_s),
                static_cast<long long>(bytes_per_step),
                static_cast<long long>(4 * params), static_cast<long long>(params), static_cast<long long>(tokens));
  return 0;
}

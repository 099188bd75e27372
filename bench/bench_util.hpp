// Helpers shared by the Google Benchmark programs in bench/: the thread count as a benchmark
// argument, a GFLOP/s counter, and "fraction of sgemm", the yardstick every op benchmark
// reports: the op's rate over that of plain sgemm on the same list of products, on the same
// threads, the two measured interleaved in the same process.
//
// A typical op benchmark (arguments: sizes..., threads last):
//
//   void BM_linear_forward(benchmark::State& state) {
//     const int64_t N = state.range(0), in = state.range(1), out = state.range(2);
//     attn::bench::use_threads(state, /*arg=*/3);
//     ... set up inputs ...
//     attn::bench::time_op(state, {{N, out, in}}, [&] { ... one forward ... });
//   }
//   BENCHMARK(BM_linear_forward)->ArgNames({"N", "in", "out", "threads"})->Args({1536, 256, 1024, 1})
//       ->Args({1536, 256, 1024, 2})->UseManualTime()->Unit(benchmark::kMillisecond);
//
// Register op benchmarks with UseManualTime() (time_op reports the op's elapsed time alone),
// plain loops with UseRealTime(): the default CPU time is the main thread's alone and ignores
// the other OpenMP/OpenBLAS threads, so rates on 2 threads would come out inflated.
#pragma once
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "attn/blas/blas.hpp"
#include "attn/core/flops.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/core/threading.hpp"

namespace attn::bench {

// Sets attnlab's thread count (OpenMP loops and OpenBLAS together) from argument `arg` of the
// benchmark, so one registration can cover 1 and 2 threads.
inline int use_threads(benchmark::State& state, int arg) {
  const int threads = static_cast<int>(state.range(arg));
  attn::set_num_threads(threads);
  return threads;
}

// Counter "GFLOP/s": flop_per_iteration (a multiply-add counts 2) times iterations over the
// elapsed time, in units of 1e9. Call after the timed loop.
inline void report_gflops(benchmark::State& state, double flop_per_iteration) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flop_per_iteration * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Seconds of CPU time used by the whole process (all threads) so far.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// One matrix product of an op's work: C[M, N] = A[M, K] B[K, N], `batch` independent times
// (M, N, K: BLAS's GEMM sizes, not docs/ARCHITECTURE.md's dimension letters).
// An op benchmark lists the products its arithmetic amounts to (forward and backward), and
// takes both its useful flops and its sgemm yardstick from that list.
struct Gemm {
  int64_t M = 0, N = 0, K = 0, batch = 1;
};
using GemmList = std::vector<Gemm>;

// 2 M N K batch summed over the list: the flops of the useful arithmetic.
inline double gemm_flop(const GemmList& gemms) {
  double flop = 0.0;
  for (const Gemm& g : gemms) flop += 2.0 * static_cast<double>(g.M * g.N * g.K * g.batch);
  return flop;
}

// Elapsed and process-CPU seconds of one run.
struct Seconds {
  double wall = 0.0, cpu = 0.0;
};

// Times one call of `run` (followed by ClobberMemory) in elapsed and process CPU time.
template <class Run>
Seconds time_once(Run&& run) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const double cpu_start = process_cpu_seconds();
  run();
  benchmark::ClobberMemory();
  const double cpu = process_cpu_seconds() - cpu_start;
  return {std::chrono::duration<double>(Clock::now() - start).count(), cpu};
}

// The sgemm yardstick of a GemmList: plain row-major, untransposed products of exactly the
// listed shapes, in the listed order, each batch through blas::gemm_strided_batched (the
// batched entry point every op uses; one item is a single cblas_sgemm). run() performs the
// whole list once and returns the time it took. A batch is run with at most as many items as
// keep A, B and C within ~128 MB (at least one item) and its time scaled up to the full batch:
// the items are independent, so a shorter batch runs at the same rate without, say, a 512 MB
// score matrix at T = S = 4096. Operands are random and allocated once per distinct shape.
class Yardstick {
 public:
  explicit Yardstick(const GemmList& gemms) {
    constexpr int64_t kMaxFloats = int64_t{32} << 20;
    Rng rng(1);
    for (const Gemm& g : gemms) {
      const int64_t item = g.M * g.K + g.K * g.N + g.M * g.N;
      const int64_t batch = std::clamp<int64_t>(kMaxFloats / item, 1, g.batch);
      const auto key = std::make_tuple(g.M, g.N, g.K, batch);
      auto it = operands_.find(key);
      if (it == operands_.end())
        it = operands_.emplace(key, Operands{randn({batch, g.M * g.K}, rng), randn({batch, g.K * g.N}, rng),
                                             Tensor({batch, g.M * g.N})}).first;
      steps_.push_back({g, batch, &it->second});
    }
  }

  Seconds run() {
    Seconds total;
    for (Step& s : steps_) {
      const Gemm& g = s.gemm;
      const Seconds t = time_once([&] {
        blas::gemm_strided_batched(blas::Trans::N, blas::Trans::N, g.M, g.N, g.K, 1.0f, s.operands->A.data(), g.K,
                                   g.M * g.K, s.operands->B.data(), g.N, g.K * g.N, 0.0f, s.operands->C.data(),
                                   g.N, g.M * g.N, s.batch);
      });
      const double scale = static_cast<double>(g.batch) / static_cast<double>(s.batch);
      total.wall += t.wall * scale;
      total.cpu += t.cpu * scale;
    }
    return total;
  }

 private:
  struct Operands {
    Tensor A, B, C;
  };
  struct Step {
    Gemm gemm;
    int64_t batch;         // items actually run
    Operands* operands;    // stable: std::map never moves its nodes
  };
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, Operands> operands_;
  std::vector<Step> steps_;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The flops the library itself counts (attn::flops, 2 per multiply-add) during one call of
// `run`: the arithmetic the op performs, GEMMs through the BLAS seam plus whatever else an op
// declares (the benchmarked ops declare nothing else).
template <class Run>
double performed_flop(Run&& run) {
  attn::flops::reset();
  run();
  return 2.0 * static_cast<double>(attn::flops::count());
}

// The whole of an op benchmark whose useful work is `gemms`. Each iteration runs the op once
// (`run`, the timed part) and then its sgemm yardstick once (Yardstick, untimed for Google
// Benchmark), so the two are measured interleaved, under the same load, caches and clock.
// Register with ->UseManualTime(): the iteration time is the op's elapsed time alone.
// Reports (plain numbers, not rates), with r = the median over iterations of yardstick time /
// op time (a burst of other work on a shared machine spoils a few pairs, not the median):
//   of_sgemm         the op's rate on the flops it performs (`counted` below: the masked tiles
//                    it skips are not in it, recomputed tiles are) over sgemm's rate on the
//                    listed products: r * counted * useful_fraction. 1.0 = its arithmetic runs
//                    as fast as plain sgemm's;
//   of_sgemm_useful  the same on the useful flops only (gemm_flop(gemms) * useful_fraction):
//                    r * useful_fraction. Lower than of_sgemm by the arithmetic the op adds;
//   of_sgemm_cpu     1 thread only: of_sgemm in process CPU time (totals over all iterations).
//                    Other processes take CPU time from both alike; with 2 threads OpenMP's
//                    spin-waiting inflates CPU time, so the counter is left out;
//   GFLOP/s          useful flops per second of the op; sgemm_GFLOP/s the yardstick's rate;
//   counted          performed flops over useful flops: 1 when the op does exactly the
//                    useful products, above 1 for arithmetic beyond them (recomputed score
//                    tiles, diagonal tiles of a causal mask computed whole).
// useful_fraction < 1 is for masked work the op may skip (causal attention), measured against
// sgemm running the products in full.
template <class Run>
void time_op(benchmark::State& state, const GemmList& gemms, Run&& run, double useful_fraction = 1.0) {
  Yardstick yardstick(gemms);
  const double full = gemm_flop(gemms), useful = full * useful_fraction;
  const double performed = performed_flop(run);   // also the warm-up: page faults, buffers, threads
  yardstick.run();
  Seconds op, sgemm;
  std::vector<double> ratios;
  for (auto _ : state) {
    const Seconds o = time_once(run);
    state.SetIterationTime(o.wall);
    const Seconds y = yardstick.run();
    op.wall += o.wall, op.cpu += o.cpu;
    sgemm.wall += y.wall, sgemm.cpu += y.cpu;
    ratios.push_back(y.wall / o.wall);
  }
  const double iters = static_cast<double>(state.iterations()), r = median(ratios);
  state.counters["GFLOP/s"] = useful * iters * 1e-9 / op.wall;
  state.counters["sgemm_GFLOP/s"] = full * iters * 1e-9 / sgemm.wall;
  state.counters["of_sgemm"] = r * performed / full;
  state.counters["of_sgemm_useful"] = r * useful_fraction;
  if (attn::num_threads() == 1 && op.cpu > 0.0) state.counters["of_sgemm_cpu"] = sgemm.cpu / op.cpu * performed / full;
  state.counters["counted"] = performed / useful;
}

}  // namespace attn::bench

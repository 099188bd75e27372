// Helpers shared by the Google Benchmark programs in bench/: the thread count as a benchmark
// argument, a GFLOP/s counter, and "fraction of sgemm", the yardstick every op benchmark
// reports: its achieved GFLOP/s over that of one plain sgemm of comparable shape on the same
// threads, measured in the same process.
//
// A typical benchmark (arguments: sizes..., threads last):
//
//   void BM_linear(benchmark::State& state) {
//     const int64_t N = state.range(0), in = state.range(1), out = state.range(2);
//     attn::bench::use_threads(state, /*arg=*/3);
//     const double sgemm = attn::bench::sgemm_gflops(N, out, in);     // before the timed loop
//     ... set up inputs ...
//     for (auto _ : state) { ... one forward ...; benchmark::ClobberMemory(); }
//     attn::bench::report_vs_sgemm(state, 2.0 * N * in * out, sgemm);
//   }
//   BENCHMARK(BM_linear)->ArgNames({"N", "in", "out", "threads"})->Args({1536, 256, 1024, 1})
//       ->Args({1536, 256, 1024, 2})->UseRealTime()->Unit(benchmark::kMillisecond);
//
// Always register with UseRealTime(): the default CPU time is the main thread's alone and
// ignores the other OpenMP/OpenBLAS threads, so rates on 2 threads would come out inflated.
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

// The rate of sgemm on one shape, in elapsed time and in process CPU time.
struct SgemmRate {
  double wall = 0.0;   // GFLOP/s in elapsed time, the best window
  double cpu = 0.0;    // GFLOP/s in process CPU time, the best window
};

// GFLOP/s of sgemm C[M, N] = A[M, K] B[K, N] (row-major, no transposes; `batch` > 1 runs
// blas::gemm_strided_batched over that many independent products) on the current thread
// count. Measured once per shape and thread count in a process, for about min_seconds after
// one warm-up call, and cached: the best of at least 3 windows of about min_seconds / 4 each,
// so that a burst of other work on a shared machine does not lower the yardstick (benchmarks
// run with --benchmark_repetitions are read the same way: fastest repetition). Call it before
// the timed loop, whose time it does not enter.
// sgemm_rate gives the rate in process CPU time too, the yardstick of counter of_sgemm_cpu
// (see time_op); sgemm_gflops gives the elapsed-time rate alone.
inline SgemmRate sgemm_rate(int64_t M, int64_t N, int64_t K, int64_t batch = 1, double min_seconds = 0.2) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int>;
  static std::map<Key, SgemmRate> cache;
  const Key key{M, N, K, batch, attn::num_threads()};
  if (const auto it = cache.find(key); it != cache.end()) return it->second;

  Rng rng(1);
  const Tensor A = randn({batch, M * K}, rng), B = randn({batch, K * N}, rng);
  Tensor C({batch, M * N});
  auto run = [&] {
    blas::gemm_strided_batched(blas::Trans::N, blas::Trans::N, M, N, K, 1.0f, A.data(), K, M * K, B.data(),
                               N, K * N, 0.0f, C.data(), N, M * N, batch);
    benchmark::ClobberMemory();
  };
  run();   // warm-up: page faults, OpenBLAS buffers, thread start
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const double gflop = 2e-9 * static_cast<double>(M * N * K * batch);
  SgemmRate rate;
  double total = 0.0;
  for (int window = 0; window < 3 || total < min_seconds; ++window) {
    const auto window_start = Clock::now();
    const double cpu_start = process_cpu_seconds();
    int64_t reps = 0;
    double seconds = 0.0;
    do {
      run();
      ++reps;
      seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
    } while (seconds < min_seconds / 4);
    const double cpu = process_cpu_seconds() - cpu_start;
    rate.wall = std::max(rate.wall, gflop * static_cast<double>(reps) / seconds);
    rate.cpu = std::max(rate.cpu, gflop * static_cast<double>(reps) / cpu);
    total = std::chrono::duration<double>(Clock::now() - start).count();
  }
  cache.emplace(key, rate);
  return rate;
}

inline double sgemm_gflops(int64_t M, int64_t N, int64_t K, int64_t batch = 1, double min_seconds = 0.2) {
  return sgemm_rate(M, N, K, batch, min_seconds).wall;
}

// One matrix product of an op's work: C[M, N] = A[M, K] B[K, N], `batch` independent times.
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

// The rate plain sgemm reaches on the whole list: its flops over the sum of each product's time
// at that product's own sgemm_gflops (a harmonic mean weighted by flops). Batches are measured
// with at most as many items as keep A, B and C within ~128 MB (at least one item): the items
// are independent, so a shorter batch runs at the same rate without a 512 MB score matrix at
// L = 4096. Call before the timed loop, like sgemm_gflops.
inline SgemmRate sgemm_rate(const GemmList& gemms) {
  constexpr int64_t kMaxFloats = int64_t{32} << 20;
  double wall_seconds = 0.0, cpu_seconds = 0.0, gflop = 0.0;
  for (const Gemm& g : gemms) {
    const int64_t item = g.M * g.K + g.K * g.N + g.M * g.N;
    const int64_t batch = std::clamp<int64_t>(kMaxFloats / item, 1, g.batch);
    const double f = 2e-9 * static_cast<double>(g.M * g.N * g.K * g.batch);
    const SgemmRate r = sgemm_rate(g.M, g.N, g.K, batch);
    wall_seconds += f / r.wall;
    cpu_seconds += f / r.cpu;
    gflop += f;
  }
  return {gflop / wall_seconds, gflop / cpu_seconds};
}
inline double sgemm_gflops(const GemmList& gemms) { return sgemm_rate(gemms).wall; }

// Counters "GFLOP/s" (as report_gflops) and "of_sgemm": the achieved rate over `sgemm_gflops`
// (from sgemm_gflops() for a comparable shape); 1.0 means as fast as the plain GEMM. The
// console prints both with a "/s" suffix (they are rates to Google Benchmark); the numbers are
// GFLOP/s and a plain ratio.
inline void report_vs_sgemm(benchmark::State& state, double flop_per_iteration, double sgemm_gflops) {
  report_gflops(state, flop_per_iteration);
  state.counters["of_sgemm"] = benchmark::Counter(flop_per_iteration * 1e-9 / sgemm_gflops,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

// Counter "counted": the flops the library itself counted (attn::flops, 2 per multiply-add)
// during one call of `run`, over flop_per_iteration. 1.0 means the op performed exactly the
// useful products; above 1 is arithmetic beyond them (recomputed score tiles, masked entries
// computed anyway, counted elementwise work). Call outside the timed loop.
template <class Run>
void report_counted(benchmark::State& state, double flop_per_iteration, Run&& run) {
  attn::flops::reset();
  run();
  state.counters["counted"] = 2.0 * static_cast<double>(attn::flops::count()) / flop_per_iteration;
}

// The whole of an op benchmark whose useful work is `gemms`: measures the sgemm yardstick,
// times `run` (one op call) as the loop body, and reports
//   GFLOP/s, of_sgemm     useful flops (gemm_flop(gemms) * useful_fraction) in elapsed time;
//   of_sgemm_cpu          1 thread only: the same ratio in process CPU time for both the op and
//                         the yardstick. A busy shared machine takes CPU from both alike, so
//                         this ratio survives load that wrecks the elapsed-time one (cache
//                         contention and clock changes still leak in). With 2 threads, OpenMP's
//                         spin-waiting inflates CPU time, so the counter is left out.
//   counted               see report_counted.
// useful_fraction < 1 is for masked work the op may skip (causal attention), measured against
// sgemm running the products in full.
template <class Run>
void time_op(benchmark::State& state, const GemmList& gemms, Run&& run, double useful_fraction = 1.0) {
  const SgemmRate sgemm = sgemm_rate(gemms);
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  const double cpu = process_cpu_seconds() - cpu_start;
  const double flop = gemm_flop(gemms) * useful_fraction;
  report_vs_sgemm(state, flop, sgemm.wall);
  if (attn::num_threads() == 1 && cpu > 0.0)
    state.counters["of_sgemm_cpu"] = flop * static_cast<double>(state.iterations()) * 1e-9 / cpu / sgemm.cpu;
  report_counted(state, flop, run);
}

}  // namespace attn::bench

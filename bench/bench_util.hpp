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

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "attn/blas/blas.hpp"
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

// GFLOP/s of sgemm C[M, N] = A[M, K] B[K, N] (row-major, no transposes; `batch` > 1 runs
// blas::gemm_strided_batched over that many independent products) on the current thread
// count. Measured once per shape and thread count in a process, for about min_seconds after
// one warm-up call, and cached. Call it before the timed loop, whose time it does not enter.
inline double sgemm_gflops(int64_t M, int64_t N, int64_t K, int64_t batch = 1, double min_seconds = 0.2) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int>;
  static std::map<Key, double> cache;
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
  int64_t reps = 0;
  double seconds = 0.0;
  do {
    run();
    ++reps;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (seconds < min_seconds || reps < 3);
  const double gflops = 2.0 * static_cast<double>(M * N * K * batch) * static_cast<double>(reps) / seconds * 1e-9;
  cache.emplace(key, gflops);
  return gflops;
}

// Counters "GFLOP/s" (as report_gflops) and "of_sgemm": the achieved rate over `sgemm_gflops`
// (from sgemm_gflops() for a comparable shape); 1.0 means as fast as the plain GEMM. The
// console prints both with a "/s" suffix (they are rates to Google Benchmark); the numbers are
// GFLOP/s and a plain ratio.
inline void report_vs_sgemm(benchmark::State& state, double flop_per_iteration, double sgemm_gflops) {
  report_gflops(state, flop_per_iteration);
  state.counters["of_sgemm"] = benchmark::Counter(flop_per_iteration * 1e-9 / sgemm_gflops,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace attn::bench

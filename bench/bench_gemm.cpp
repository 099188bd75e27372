// The raw sgemm through the BLAS seam (attn::blas::gemm), the ceiling every op is measured
// against: square sizes and the shapes of a Transformer's layers on a 64 x 24-token batch
// (M = 1536 rows), on 1 and 2 threads. Model shapes run both as A B (trans_b 0) and as
// x W^T with W stored [N, K] (trans_b 1), the layout of a linear layer. A second benchmark
// times the batched GEMM of multi-head attention against one sgemm of the same work. M, N, K
// are BLAS's GEMM sizes here (C [M, N] = A [M, K] B [K, N]), not docs/ARCHITECTURE.md's letters.
#include <benchmark/benchmark.h>

#include "attn/blas/blas.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "bench_util.hpp"

namespace {

using attn::Tensor;
using attn::blas::Trans;

// Arguments: M, N, K, trans_b, threads.
void BM_sgemm(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const Trans tb = state.range(3) != 0 ? Trans::T : Trans::N;
  attn::bench::use_threads(state, /*arg=*/4);
  attn::Rng rng(1);
  const Tensor A = attn::randn({M, K}, rng);
  const Tensor B = tb == Trans::T ? attn::randn({N, K}, rng) : attn::randn({K, N}, rng);
  Tensor C({M, N});
  const int64_t ldb = tb == Trans::T ? K : N;
  for (auto _ : state) {
    attn::blas::gemm(Trans::N, tb, M, N, K, 1.0f, A.data(), K, B.data(), ldb, 0.0f, C.data(), N);
    benchmark::ClobberMemory();
  }
  attn::bench::report_gflops(state, 2.0 * static_cast<double>(M * N * K));
}

void gemm_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K", "trans_b", "threads"});
  for (int threads : {1, 2}) {
    for (int64_t n : {256, 512, 1024}) b->Args({n, n, n, 0, threads});
    for (int64_t trans_b : {0, 1}) {
      b->Args({1536, 1024, 256, trans_b, threads});   // FFN up-projection, d 256 -> 1024
      b->Args({1536, 256, 1024, trans_b, threads});   // FFN down-projection, 1024 -> 256
      b->Args({1536, 8000, 256, trans_b, threads});   // output projection to an 8000-word vocabulary
    }
  }
}

BENCHMARK(BM_sgemm)->Name("sgemm")->Apply(gemm_shapes)->UseRealTime()->Unit(benchmark::kMillisecond);

// Arguments: batch, M, N, K, threads. `batch` independent [M, K] x [K, N] products through
// blas::gemm_strided_batched; of_sgemm compares them with a single sgemm [batch * M, K] x [K, N]
// of the same flops, i.e. what splitting the work into small matrices costs.
void BM_sgemm_batched(benchmark::State& state) {
  const int64_t batch = state.range(0), M = state.range(1), N = state.range(2), K = state.range(3);
  attn::bench::use_threads(state, /*arg=*/4);
  attn::Rng rng(1);
  const Tensor A = attn::randn({batch, M, K}, rng), B = attn::randn({batch, K, N}, rng);
  Tensor C({batch, M, N});
  attn::bench::time_op(state, {{batch * M, N, K}}, [&] {
    attn::blas::gemm_strided_batched(Trans::N, Trans::N, M, N, K, 1.0f, A.data(), K, M * K, B.data(), N,
                                     K * N, 0.0f, C.data(), N, M * N, batch);
  });
}

void batched_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "M", "N", "K", "threads"});
  for (int threads : {1, 2}) {
    b->Args({256, 24, 24, 64, threads});     // attention scores q k^T: 64 sequences x 4 heads, T 24, HD 64
    b->Args({256, 24, 64, 24, threads});     // attention context P v
    b->Args({32, 128, 128, 64, threads});    // the same at T = 128 with 32 sequence-heads
  }
}

BENCHMARK(BM_sgemm_batched)
    ->Name("sgemm_batched")
    ->Apply(batched_shapes)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// The GEMM-bound building blocks of a Transformer: ops::linear_forward / linear_backward on the
// layers of a Transformer with d_model 256 on a 64 x 24-token batch (B*T = 1536 rows: FFN up
// 256 -> 1024, FFN down 1024 -> 256, output projection 256 -> 8000), and the batched
// ops::matmul_forward / matmul_backward of multi-head attention on [B*NH, T, HD] = [256, 24, 64]
// (the scores q k^T and the context P v). Each reports GFLOP/s of its GEMMs and of_sgemm, the
// fraction of plain sgemm on exactly those GEMM shapes (bench_util.hpp); 1 and 2 threads.
// GEMM triples are BLAS's (M, N, K): C [M, N] = A [M, K] B [K, N].
#include <benchmark/benchmark.h>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/matmul.hpp"
#include "bench_util.hpp"

namespace {

using attn::Tensor;
using attn::bench::Gemm;
using attn::bench::GemmList;

// y = x W^T + b: x [B*T, in], W [out, in] -> y [B*T, out], one GEMM (B*T, out, in).
GemmList linear_forward_gemms(int64_t N, int64_t in, int64_t out) { return {{N, out, in}}; }
// dx = dy W: (B*T, in, out); dW += dy^T x: (out, in, B*T). db is a column sum, not counted.
GemmList linear_backward_gemms(int64_t N, int64_t in, int64_t out) { return {{N, in, out}, {out, in, N}}; }

// Arguments: N (the B*T rows), in, out, threads.
void BM_linear_forward(benchmark::State& state) {
  const int64_t N = state.range(0), in = state.range(1), out = state.range(2);
  attn::bench::use_threads(state, /*arg=*/3);
  const GemmList gemms = linear_forward_gemms(N, in, out);
  attn::Rng rng(1);
  const Tensor x = attn::randn({N, in}, rng), W = attn::randn({out, in}, rng, 0.05f), b = attn::randn({out}, rng);
  attn::bench::time_op(state, gemms, [&] {
    Tensor y = attn::ops::linear_forward(x, W, b, nullptr);
    benchmark::DoNotOptimize(y.data());
  });
}

// Arguments: N (the B*T rows), in, out, threads. Times the backward alone (dx, dW and db).
void BM_linear_backward(benchmark::State& state) {
  const int64_t N = state.range(0), in = state.range(1), out = state.range(2);
  attn::bench::use_threads(state, /*arg=*/3);
  const GemmList gemms = linear_backward_gemms(N, in, out);
  attn::Rng rng(1);
  const Tensor x = attn::randn({N, in}, rng), W = attn::randn({out, in}, rng, 0.05f), b = attn::randn({out}, rng);
  const Tensor dy = attn::randn({N, out}, rng);
  attn::ops::LinearCache cache;
  attn::ops::linear_forward(x, W, b, &cache);
  Tensor dW = attn::zeros_like(W), db = attn::zeros_like(b);
  attn::bench::time_op(state, gemms, [&] {
    Tensor dx = attn::ops::linear_backward(dy, W, cache, dW, db);
    benchmark::DoNotOptimize(dx.data());
  });
}

void linear_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "in", "out", "threads"});
  for (int threads : {1, 2}) {
    b->Args({1536, 256, 1024, threads});   // FFN up-projection, x [64*24, 256] W [1024, 256]
    b->Args({1536, 1024, 256, threads});   // FFN down-projection, [1536, 1024] x [256, 1024]^T
    b->Args({1536, 256, 8000, threads});   // output projection to 8000 words, [1536, 256] x [8000, 256]^T
  }
}

BENCHMARK(BM_linear_forward)->Name("linear_forward")->Apply(linear_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_linear_backward)->Name("linear_backward")->Apply(linear_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);

// y = a op(b) per batch item: a [batch, M, K], b [batch, K, N] or [batch, N, K] when transposed.
GemmList matmul_forward_gemms(int64_t batch, int64_t M, int64_t N, int64_t K) { return {{M, N, K, batch}}; }
// da = dy op(b)^T: (M, K, N); d op(b) = a^T dy: (K, N, M); both per batch item.
GemmList matmul_backward_gemms(int64_t batch, int64_t M, int64_t N, int64_t K) {
  return {{M, K, N, batch}, {K, N, M, batch}};
}

struct MatmulInputs {
  Tensor a, b, dy;
  attn::ops::MatmulOptions options;
};

// Arguments: batch, M, N, K, transpose_b, threads.
MatmulInputs matmul_inputs(const benchmark::State& state) {
  const int64_t batch = state.range(0), M = state.range(1), N = state.range(2), K = state.range(3);
  const bool tb = state.range(4) != 0;
  attn::Rng rng(1);
  MatmulInputs in;
  in.a = attn::randn({batch, M, K}, rng);
  in.b = tb ? attn::randn({batch, N, K}, rng) : attn::randn({batch, K, N}, rng);
  in.dy = attn::randn({batch, M, N}, rng);
  in.options.transpose_b = tb;
  return in;
}

void BM_matmul_forward(benchmark::State& state) {
  const int64_t batch = state.range(0), M = state.range(1), N = state.range(2), K = state.range(3);
  attn::bench::use_threads(state, /*arg=*/5);
  const GemmList gemms = matmul_forward_gemms(batch, M, N, K);
  const MatmulInputs in = matmul_inputs(state);
  attn::bench::time_op(state, gemms, [&] {
    Tensor y = attn::ops::matmul_forward(in.a, in.b, in.options, nullptr);
    benchmark::DoNotOptimize(y.data());
  });
}

void BM_matmul_backward(benchmark::State& state) {
  const int64_t batch = state.range(0), M = state.range(1), N = state.range(2), K = state.range(3);
  attn::bench::use_threads(state, /*arg=*/5);
  const GemmList gemms = matmul_backward_gemms(batch, M, N, K);
  const MatmulInputs in = matmul_inputs(state);
  attn::ops::MatmulCache cache;
  attn::ops::matmul_forward(in.a, in.b, in.options, &cache);
  attn::bench::time_op(state, gemms, [&] {
    attn::ops::MatmulGrads g = attn::ops::matmul_backward(in.dy, cache);
    benchmark::DoNotOptimize(g.da.data());
    benchmark::DoNotOptimize(g.db.data());
  });
}

void matmul_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "M", "N", "K", "trans_b", "threads"});
  for (int threads : {1, 2}) {
    b->Args({256, 24, 24, 64, 1, threads});   // scores q k^T: 64 sequences x 4 heads, T 24, HD 64
    b->Args({256, 24, 64, 24, 0, threads});   // context P v
  }
}

BENCHMARK(BM_matmul_forward)->Name("matmul_forward")->Apply(matmul_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matmul_backward)->Name("matmul_backward")->Apply(matmul_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

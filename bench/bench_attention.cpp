// Scaled dot-product attention: the fused core ops::attention_forward / attention_backward
// (B 1, NH 8 heads of width 64, T = S = L from 64 to 4096, no mask and causal) and the whole
// nn::MultiHeadAttention layer (d_model 512, 8 heads, self-attention, B 1, L 64 to 1024).
//
// Useful flops are those of the products attention is defined by: forward q k^T and P v, and
// backward dP = dO v^T, dv = P^T dO, dq = dS k, dk = dS^T q, over the visible (query, key)
// pairs only (L (L+1) / 2 per head when causal). of_sgemm_useful sets them against plain
// batched sgemm running those same products in full (bench_util.hpp), so a causal core that
// skips the masked half at the same efficiency scores the same as an unmasked one. The extra
// arithmetic the core really performs (the streaming backward recomputes each score tile; tiles
// on a causal diagonal are computed whole) shows in the counter "counted" (library
// multiply-adds over useful ones) and is credited in of_sgemm, not in GFLOP/s.
//
// Memory: with automatic path selection the core streams (online softmax over key tiles,
// O(L) memory) whenever S > kStreamMinKeys = 64 and no weights are requested; only L = 64 runs
// materialised (B NH L^2 floats of weights). The JSON counter "streamed" records the path taken.
#include <benchmark/benchmark.h>

#include <cmath>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/multi_head_attention.hpp"
#include "attn/ops/attention_core.hpp"
#include "attn/ops/attention_mask.hpp"
#include "bench_util.hpp"

namespace {

using attn::Tensor;
using attn::bench::GemmList;
using attn::ops::AttentionMask;

constexpr int64_t kBatch = 1, kHeads = 8, kHeadDim = 64;

// The core's products on BH = B*NH heads of T queries over S keys of width HD (the argument D).
GemmList core_forward_gemms(int64_t BH, int64_t T, int64_t S, int64_t D) {
  return {{T, S, D, BH}, {T, D, S, BH}};   // scores q k^T, context P v
}
GemmList core_backward_gemms(int64_t BH, int64_t T, int64_t S, int64_t D) {
  return {{T, S, D, BH}, {S, D, T, BH}, {T, D, S, BH}, {S, D, T, BH}};   // dP, dv, dq, dk
}
GemmList concat(GemmList a, const GemmList& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
// The fraction of (query, key) pairs a mask leaves visible when T = S = L.
double visible_fraction(int64_t L, bool causal) {
  return causal ? static_cast<double>(L + 1) / (2.0 * static_cast<double>(L)) : 1.0;
}

struct CoreInputs {
  Tensor q, k, v, dout;
  AttentionMask mask;
  float scale;
};

// Arguments: L, causal, threads.
CoreInputs core_inputs(const benchmark::State& state) {
  const int64_t L = state.range(0);
  attn::Rng rng(1);
  CoreInputs in;
  in.q = attn::randn({kBatch, kHeads, L, kHeadDim}, rng);
  in.k = attn::randn({kBatch, kHeads, L, kHeadDim}, rng);
  in.v = attn::randn({kBatch, kHeads, L, kHeadDim}, rng);
  in.dout = attn::randn({kBatch, kHeads, L, kHeadDim}, rng);
  in.mask = state.range(1) != 0 ? AttentionMask::causal_mask() : AttentionMask::none();
  in.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  return in;
}

// Inference forward (no cache).
void BM_attention_forward(benchmark::State& state) {
  const int64_t L = state.range(0);
  attn::bench::use_threads(state, /*arg=*/2);
  const GemmList gemms = core_forward_gemms(kBatch * kHeads, L, L, kHeadDim);
  const CoreInputs in = core_inputs(state);
  auto run = [&] {
    Tensor out = attn::ops::attention_forward(in.q, in.k, in.v, in.scale, in.mask, nullptr);
    benchmark::DoNotOptimize(out.data());
  };
  attn::bench::time_op(state, gemms, run, visible_fraction(L, state.range(1) != 0));
}

// Training step of the core: forward with cache, then backward.
void BM_attention_train(benchmark::State& state) {
  const int64_t L = state.range(0);
  attn::bench::use_threads(state, /*arg=*/2);
  const int64_t BH = kBatch * kHeads;
  const GemmList gemms = concat(core_forward_gemms(BH, L, L, kHeadDim), core_backward_gemms(BH, L, L, kHeadDim));
  const CoreInputs in = core_inputs(state);
  bool streamed = false;
  auto run = [&] {
    attn::ops::AttentionCache cache;
    Tensor out = attn::ops::attention_forward(in.q, in.k, in.v, in.scale, in.mask, &cache);
    benchmark::DoNotOptimize(out.data());
    attn::ops::AttentionGrads g = attn::ops::attention_backward(in.dout, cache);
    benchmark::DoNotOptimize(g.dq.data());
    streamed = cache.streamed;
  };
  attn::bench::time_op(state, gemms, run, visible_fraction(L, state.range(1) != 0));
  state.counters["streamed"] = streamed ? 1.0 : 0.0;
}

void core_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"L", "causal", "threads"});
  for (int threads : {1, 2})
    for (int64_t causal : {0, 1})
      for (int64_t L : {64, 128, 256, 512, 1024, 2048, 4096}) b->Args({L, causal, threads});
}

BENCHMARK(BM_attention_forward)
    ->Name("attention_forward")
    ->Apply(core_shapes)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_attention_train)
    ->Name("attention_fwd_bwd")
    ->Apply(core_shapes)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// nn::MultiHeadAttention, self-attention without mask: d_model 512, 8 heads, one sequence.
constexpr int64_t kModel = 512, kMhaHeads = 8;

GemmList mha_forward_gemms(int64_t B, int64_t L) {
  const int64_t N = B * L;
  GemmList g(4, {N, kModel, kModel});   // w_q, w_k, w_v, w_o
  return concat(g, core_forward_gemms(B * kMhaHeads, L, L, kModel / kMhaHeads));
}
GemmList mha_backward_gemms(int64_t B, int64_t L) {
  const int64_t N = B * L;
  GemmList g;
  for (int i = 0; i < 4; ++i) {
    g.push_back({N, kModel, kModel});   // dx = dy W
    g.push_back({kModel, kModel, N});   // dW += dy^T x
  }
  return concat(g, core_backward_gemms(B * kMhaHeads, L, L, kModel / kMhaHeads));
}

// Arguments: L, threads.
void BM_mha_forward(benchmark::State& state) {
  const int64_t L = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = mha_forward_gemms(kBatch, L);
  attn::Rng rng(1);
  const attn::nn::MultiHeadAttention mha(kModel, kMhaHeads, "mha", rng);
  const Tensor x = attn::randn({kBatch, L, kModel}, rng);
  attn::bench::time_op(state, gemms, [&] {
    Tensor y = mha.forward(x, x, x, AttentionMask::none(), nullptr);
    benchmark::DoNotOptimize(y.data());
  });
}

// Forward with cache, then backward (parameter gradients accumulate across iterations).
void BM_mha_train(benchmark::State& state) {
  const int64_t L = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = concat(mha_forward_gemms(kBatch, L), mha_backward_gemms(kBatch, L));
  attn::Rng rng(1);
  attn::nn::MultiHeadAttention mha(kModel, kMhaHeads, "mha", rng);
  const Tensor x = attn::randn({kBatch, L, kModel}, rng), dy = attn::randn({kBatch, L, kModel}, rng);
  auto run = [&] {
    attn::nn::MultiHeadAttentionCache cache;
    Tensor y = mha.forward(x, x, x, AttentionMask::none(), &cache);
    benchmark::DoNotOptimize(y.data());
    attn::nn::MultiHeadAttentionGrads g = mha.backward(dy, cache);
    benchmark::DoNotOptimize(g.dquery.data());
  };
  attn::bench::time_op(state, gemms, run);
}

void mha_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"L", "threads"});
  for (int threads : {1, 2})
    for (int64_t L : {64, 256, 1024}) b->Args({L, threads});
}

BENCHMARK(BM_mha_forward)->Name("mha_forward")->Apply(mha_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mha_train)->Name("mha_fwd_bwd")->Apply(mha_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// Recurrent cells and layers: one LSTM / GRU step (ops::lstm_cell_*, ops::gru_cell_*; B 64,
// H 256 and 512) and a whole layer over a sequence (ops::lstm_layer_*, ops::gru_layer_*;
// T 24, B 64, I = H = 256), forward and backward timed separately, on 1 and 2 threads.
//
// Useful flops are the GEMMs' (G = 4H stacked gate rows for the LSTM, 3H for the GRU): a step is
// h W_hh^T (B, G, H) forward and dh = dgates W_hh (B, H, G) plus dW_hh += dgates^T h
// (G, H, B) backward; a layer adds the input projection x W_ih^T over all T B rows forward,
// dx and dW_ih over all rows backward, and accumulates dW_hh in one GEMM over all rows. The
// fused gate nonlinearities are overhead, not counted. of_sgemm sets the rate against plain
// sgemm on the same list of products: a step's [64, H] x [H, G] product is small, so even
// plain sgemm runs it far below its peak, and of_sgemm isolates what the op adds on top.
#include <benchmark/benchmark.h>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/ops/gru_cell.hpp"
#include "attn/ops/lstm_cell.hpp"
#include "bench_util.hpp"

namespace {

using attn::Tensor;
using attn::bench::GemmList;

constexpr int64_t kBatch = 64, kSteps = 24;

// One step of a cell of `G` gate blocks (the argument: 4 or 3, so G * H rows): forward and
// backward products.
GemmList step_forward_gemms(int64_t G, int64_t B, int64_t H) { return {{B, G * H, H}}; }
GemmList step_backward_gemms(int64_t G, int64_t B, int64_t H) { return {{B, H, G * H}, {G * H, H, B}}; }

// A layer over T steps of B rows with I inputs.
// The recurrent products are T separate GEMMs (each step needs the previous one's result), not
// one batch of T, so the yardstick times them one by one.
GemmList layer_forward_gemms(int64_t G, int64_t T, int64_t B, int64_t I, int64_t H) {
  GemmList g{{T * B, G * H, I}};                       // gates_x = x W_ih^T, all rows at once
  g.insert(g.end(), T, {B, G * H, H});                 // h_{t-1} W_hh^T, one per step
  return g;
}
GemmList layer_backward_gemms(int64_t G, int64_t T, int64_t B, int64_t I, int64_t H) {
  GemmList g(T, {B, H, G * H});                        // dh_{t-1} = dgates_t W_hh, one per step
  g.push_back({G * H, H, T * B});                      // dW_hh += dG^T h, over all rows
  g.push_back({G * H, I, T * B});                      // dW_ih += dG^T x
  g.push_back({T * B, I, G * H});                      // dx = dG W_ih
  return g;
}

// ---- one step. Arguments: H, threads.

void BM_lstm_cell_forward(benchmark::State& state) {
  const int64_t B = kBatch, H = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = step_forward_gemms(4, B, H);
  attn::Rng rng(1);
  const Tensor gx = attn::randn({B, 4 * H}, rng), h = attn::randn({B, H}, rng), c = attn::randn({B, H}, rng);
  const Tensor W_hh = attn::randn({4 * H, H}, rng, 0.05f);
  attn::bench::time_op(state, gemms, [&] {
    attn::ops::LstmState s = attn::ops::lstm_cell_forward(gx, h, c, W_hh, nullptr);
    benchmark::DoNotOptimize(s.h.data());
  });
}

void BM_lstm_cell_backward(benchmark::State& state) {
  const int64_t B = kBatch, H = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = step_backward_gemms(4, B, H);
  attn::Rng rng(1);
  const Tensor gx = attn::randn({B, 4 * H}, rng), h = attn::randn({B, H}, rng), c = attn::randn({B, H}, rng);
  const Tensor W_hh = attn::randn({4 * H, H}, rng, 0.05f);
  const Tensor dh = attn::randn({B, H}, rng), dc = attn::randn({B, H}, rng);
  attn::ops::LstmCellCache cache;
  attn::ops::lstm_cell_forward(gx, h, c, W_hh, &cache);
  Tensor dW_hh = attn::zeros_like(W_hh);
  attn::bench::time_op(state, gemms, [&] {
    attn::ops::LstmCellGrads g = attn::ops::lstm_cell_backward(dh, dc, W_hh, cache, dW_hh);
    benchmark::DoNotOptimize(g.dgates_x.data());
  });
}

void BM_gru_cell_forward(benchmark::State& state) {
  const int64_t B = kBatch, H = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = step_forward_gemms(3, B, H);
  attn::Rng rng(1);
  const Tensor gx = attn::randn({B, 3 * H}, rng), h = attn::randn({B, H}, rng);
  const Tensor W_hh = attn::randn({3 * H, H}, rng, 0.05f), b_hh = attn::randn({3 * H}, rng);
  attn::bench::time_op(state, gemms, [&] {
    Tensor h1 = attn::ops::gru_cell_forward(gx, h, W_hh, b_hh, nullptr);
    benchmark::DoNotOptimize(h1.data());
  });
}

void BM_gru_cell_backward(benchmark::State& state) {
  const int64_t B = kBatch, H = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = step_backward_gemms(3, B, H);
  attn::Rng rng(1);
  const Tensor gx = attn::randn({B, 3 * H}, rng), h = attn::randn({B, H}, rng);
  const Tensor W_hh = attn::randn({3 * H, H}, rng, 0.05f), b_hh = attn::randn({3 * H}, rng);
  const Tensor dh = attn::randn({B, H}, rng);
  attn::ops::GruCellCache cache;
  attn::ops::gru_cell_forward(gx, h, W_hh, b_hh, &cache);
  Tensor dW_hh = attn::zeros_like(W_hh), db_hh = attn::zeros_like(b_hh);
  attn::bench::time_op(state, gemms, [&] {
    attn::ops::GruCellGrads g = attn::ops::gru_cell_backward(dh, W_hh, cache, dW_hh, db_hh);
    benchmark::DoNotOptimize(g.dgates_x.data());
  });
}

void cell_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "threads"});
  for (int threads : {1, 2})
    for (int64_t H : {256, 512}) b->Args({H, threads});
}

BENCHMARK(BM_lstm_cell_forward)->Name("lstm_cell_forward")->Apply(cell_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_lstm_cell_backward)->Name("lstm_cell_backward")->Apply(cell_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_gru_cell_forward)->Name("gru_cell_forward")->Apply(cell_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_gru_cell_backward)->Name("gru_cell_backward")->Apply(cell_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);

// ---- a whole layer, T 24, B 64, I = H. Arguments: H, threads.

struct LayerInputs {
  Tensor x, h0, c0, dy;
  Tensor W_ih, W_hh, b_ih, b_hh;
};

LayerInputs layer_inputs(int64_t G, int64_t H) {
  attn::Rng rng(1);
  LayerInputs in;
  in.x = attn::randn({kSteps, kBatch, H}, rng);
  in.h0 = attn::randn({kBatch, H}, rng);
  in.c0 = attn::randn({kBatch, H}, rng);
  in.dy = attn::randn({kSteps, kBatch, H}, rng);
  in.W_ih = attn::randn({G * H, H}, rng, 0.05f);
  in.W_hh = attn::randn({G * H, H}, rng, 0.05f);
  in.b_ih = attn::randn({G * H}, rng);
  in.b_hh = attn::randn({G * H}, rng);
  return in;
}

void BM_lstm_layer_forward(benchmark::State& state) {
  const int64_t H = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = layer_forward_gemms(4, kSteps, kBatch, H, H);
  const LayerInputs in = layer_inputs(4, H);
  attn::bench::time_op(state, gemms, [&] {
    attn::ops::LstmLayerOutput o = attn::ops::lstm_layer_forward(in.x, in.h0, in.c0, in.W_ih, in.W_hh, in.b_ih, nullptr);
    benchmark::DoNotOptimize(o.y.data());
  });
}

void BM_lstm_layer_backward(benchmark::State& state) {
  const int64_t H = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = layer_backward_gemms(4, kSteps, kBatch, H, H);
  const LayerInputs in = layer_inputs(4, H);
  attn::ops::LstmLayerCache cache;
  attn::ops::lstm_layer_forward(in.x, in.h0, in.c0, in.W_ih, in.W_hh, in.b_ih, &cache);
  Tensor dW_ih = attn::zeros_like(in.W_ih), dW_hh = attn::zeros_like(in.W_hh), db = attn::zeros_like(in.b_ih);
  attn::bench::time_op(state, gemms, [&] {
    attn::ops::LstmLayerGrads g =
        attn::ops::lstm_layer_backward(in.dy, Tensor(), Tensor(), in.W_ih, in.W_hh, cache, dW_ih, dW_hh, db);
    benchmark::DoNotOptimize(g.dx.data());
  });
}

void BM_gru_layer_forward(benchmark::State& state) {
  const int64_t H = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = layer_forward_gemms(3, kSteps, kBatch, H, H);
  const LayerInputs in = layer_inputs(3, H);
  attn::bench::time_op(state, gemms, [&] {
    attn::ops::GruLayerOutput o = attn::ops::gru_layer_forward(in.x, in.h0, in.W_ih, in.W_hh, in.b_ih, in.b_hh, nullptr);
    benchmark::DoNotOptimize(o.y.data());
  });
}

void BM_gru_layer_backward(benchmark::State& state) {
  const int64_t H = state.range(0);
  attn::bench::use_threads(state, /*arg=*/1);
  const GemmList gemms = layer_backward_gemms(3, kSteps, kBatch, H, H);
  const LayerInputs in = layer_inputs(3, H);
  attn::ops::GruLayerCache cache;
  attn::ops::gru_layer_forward(in.x, in.h0, in.W_ih, in.W_hh, in.b_ih, in.b_hh, &cache);
  Tensor dW_ih = attn::zeros_like(in.W_ih), dW_hh = attn::zeros_like(in.W_hh);
  Tensor db_ih = attn::zeros_like(in.b_ih), db_hh = attn::zeros_like(in.b_hh);
  attn::bench::time_op(state, gemms, [&] {
    attn::ops::GruLayerGrads g =
        attn::ops::gru_layer_backward(in.dy, Tensor(), in.W_ih, in.W_hh, cache, dW_ih, dW_hh, db_ih, db_hh);
    benchmark::DoNotOptimize(g.dx.data());
  });
}

void layer_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "threads"});
  for (int threads : {1, 2}) b->Args({256, threads});   // T 24, B 64, I = H = 256
}

BENCHMARK(BM_lstm_layer_forward)->Name("lstm_layer_forward")->Apply(layer_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lstm_layer_backward)->Name("lstm_layer_backward")->Apply(layer_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gru_layer_forward)->Name("gru_layer_forward")->Apply(layer_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gru_layer_backward)->Name("gru_layer_backward")->Apply(layer_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

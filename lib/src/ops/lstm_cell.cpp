// LSTM cell and layer: per step one GEMM for h W_hh^T on the whole batch, then one fused
// elementwise pass, both in one parallel region (step_forward and step_backward below, shared by
// the cell and the layer). The raw-row step (lstm_rows_*) runs the same row kernels on the
// calling thread, for a caller whose time loop owns the threads (the NTM).
#include "attn/ops/lstm_cell.hpp"

#include <algorithm>
#include <cmath>

#include "attn/blas/blas.hpp"
#include "attn/core/flops.hpp"
#include "attn/ops/linear.hpp"
#include "gate_math.hpp"
#include "vector_clones.hpp"

namespace attn::ops {
namespace {

using blas::Trans;
using detail::add_column_sums;
using detail::data_or_null;
using detail::product_then_rows;
using detail::rows_then_products;
using detail::sigmoid_fast;
using detail::tanh_fast;

// One batch row of the forward pass (step_forward's below, lstm_rows_forward's): a's row added
// to the gates unless a is null, then the gates activated and the state advanced. Each row kernel
// is cloned for AVX2: at 4 floats a vector the five nonlinearities per hidden unit cost a large
// share of a step (bench/README.md, "Vector clones, exp, tanh and random numbers in bulk").
ATTN_VECTOR_CLONES
void forward_row(int64_t H, const float* a, float* g, const float* cp, float* cn, float* hn) {
  if (a != nullptr) {
#pragma omp simd
    for (int64_t j = 0; j < 4 * H; ++j) g[j] += a[j];
  }
#pragma omp simd   // the row is contiguous: one vector lane per hidden unit
  for (int64_t j = 0; j < H; ++j) {
    const float i = sigmoid_fast(g[j]), f = sigmoid_fast(g[H + j]);
    const float n = tanh_fast(g[2 * H + j]), o = sigmoid_fast(g[3 * H + j]);
    g[j] = i;
    g[H + j] = f;
    g[2 * H + j] = n;
    g[3 * H + j] = o;
    const float c = f * cp[j] + i * n;
    cn[j] = c;
    hn[j] = o * tanh_fast(c);
  }
}

// One step's forward in one parallel region (core/team.hpp): gates = h W_hh^T + beta gates,
// split as blas::gemm splits it; then, once every thread's part is in, the fused pass over the
// rows: `add`'s rows added (row b at add + b * add_stride: gates_x with stride 4H, or the bias
// with stride 0), gates activated in place to i, f, g, o, and from c_prev [B, H]
// c_next = f c_prev + i g and h_next = o tanh(c_next) (both overwritten).
void step_forward(int64_t B, int64_t H, const float* h, const float* W_hh, float beta, const float* add,
                  int64_t add_stride, float* gates, const float* c_prev, float* c_next, float* h_next) {
  flops::add_sequential_steps(1);
  const blas::SplitGemm product(Trans::N, Trans::T, B, 4 * H, H, 1.0f, h, H, W_hh, H, beta, gates, 4 * H);
  product_then_rows(product, B, H, [&](int64_t b) {
    forward_row(H, add + b * add_stride, gates + b * 4 * H, c_prev + b * H, c_next + b * H, h_next + b * H);
  });
}

// One batch row of the backward pass (step_backward's below, lstm_rows_backward's). Absent
// inputs come as a row of zeros rather than null: a null test inside the loop becomes masked
// vector loads, which on AMD cores made this pass dear beside the step's GEMMs (bench/README.md,
// "Vector clones, exp, tanh and random numbers in bulk").
ATTN_VECTOR_CLONES
void backward_row(int64_t H, const float* g, const float* cp, const float* cn, const float* dh_a,
                  const float* dh_b, const float* dc_next, float* d, float* dc_prev) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const float i = g[j], f = g[H + j], n = g[2 * H + j], o = g[3 * H + j];
    const float dh = dh_a[j] + dh_b[j];
    const float tc = tanh_fast(cn[j]);
    const float dc = dc_next[j] + dh * o * (1.0f - tc * tc);
    d[j] = dc * n * i * (1.0f - i);
    d[H + j] = dc * cp[j] * f * (1.0f - f);
    d[2 * H + j] = dc * i * (1.0f - n * n);
    d[3 * H + j] = dh * tc * o * (1.0f - o);
    dc_prev[j] = dc * f;
  }
}

// One step's backward in one parallel region. First the fused pass over the rows: with
// dh = dh_a + dh_b (either may be null) and dc_next (null: zeros), writes dpre [B, 4H] (the
// gradient of the pre-activation gates) and dc_prev = dc f, where dc = dc_next + dh o (1 - tanh²c')
// (dc_prev may alias dc_next: each element is read first). Then, once all of dpre is in,
// dh_prev = dpre W_hh (may alias dh_a or dh_b: the pass has read them) and, when dW_hh is not
// null, dW_hh += dpre^T h_prev, each split as blas::gemm splits it.
void step_backward(int64_t B, int64_t H, const float* gates, const float* c_prev, const float* c_next,
                   const float* dh_a, const float* dh_b, const float* dc_next, float* dpre, float* dc_prev,
                   const float* W_hh, float* dh_prev, const float* h_prev, float* dW_hh) {
  flops::add_sequential_steps(1);
  const blas::SplitGemm dh_product(Trans::N, Trans::N, B, H, 4 * H, 1.0f, dpre, 4 * H, W_hh, H, 0.0f, dh_prev, H);
  // Without dW_hh an empty product (M = 0): no parts' work, no multiply-adds counted.
  const blas::SplitGemm dW_product(Trans::T, Trans::N, dW_hh ? 4 * H : 0, H, B, 1.0f, dpre, 4 * H, h_prev, H,
                                   1.0f, dW_hh, H);
  const Tensor zeros({H});
  const auto row_or_zeros = [H, &zeros](const float* p, int64_t b) { return p ? p + b * H : zeros.data(); };
  rows_then_products(B, H, [&](int64_t b) {
    backward_row(H, gates + b * 4 * H, c_prev + b * H, c_next + b * H, row_or_zeros(dh_a, b), row_or_zeros(dh_b, b),
                 row_or_zeros(dc_next, b), dpre + b * 4 * H, dc_prev + b * H);
  }, dh_product, dW_product);
}

// W_hh [4H, H], checked without building the expected shape and the label unless it is wrong:
// the raw-row entry points run inside the caller's time loop, where nothing is allocated.
void check_recurrent_weights(const Tensor& W_hh, int64_t H, const char* label) {
  if (W_hh.rank() != 2 || W_hh.dim(0) != 4 * H || W_hh.dim(1) != H) check_tensor(W_hh, {4 * H, H}, label);
}

}  // namespace

LstmState lstm_cell_forward(const Tensor& gates_x, const Tensor& h, const Tensor& c,
                            const Tensor& W_hh, LstmCellCache* cache) {
  check_tensor(h, {kAny, kAny}, "lstm_cell: h [B, H]");
  const int64_t B = h.dim(0), H = h.dim(1);
  check_tensor(c, {B, H}, "lstm_cell: c [B, H]");
  check_tensor(gates_x, {B, 4 * H}, "lstm_cell: gates_x [B, 4H]");
  check_tensor(W_hh, {4 * H, H}, "lstm_cell: W_hh [4H, H]");

  // h W_hh^T, then gates_x added in the fused pass; becomes the cache's activated gates.
  Tensor gates = Tensor::uninitialized({B, 4 * H});
  LstmState out{Tensor::uninitialized({B, H}), Tensor::uninitialized({B, H})};
  step_forward(B, H, h.data(), W_hh.data(), 0.0f, gates_x.data(), 4 * H, gates.data(), c.data(), out.c.data(),
               out.h.data());
  if (cache) *cache = {h, c, gates, out.c};
  return out;
}

LstmCellGrads lstm_cell_backward(const Tensor& dh_next, const Tensor& dc_next, const Tensor& W_hh,
                                 const LstmCellCache& cache, Tensor& dW_hh) {
  const int64_t B = cache.h.dim(0), H = cache.h.dim(1);
  if (dh_next.defined()) check_tensor(dh_next, {B, H}, "lstm_cell_backward: dh_next [B, H]");
  if (dc_next.defined()) check_tensor(dc_next, {B, H}, "lstm_cell_backward: dc_next [B, H]");
  check_tensor(W_hh, {4 * H, H}, "lstm_cell_backward: W_hh [4H, H]");
  check_tensor(dW_hh, {4 * H, H}, "lstm_cell_backward: dW_hh [4H, H]");

  LstmCellGrads g{Tensor::uninitialized({B, 4 * H}), Tensor::uninitialized({B, H}),
                  Tensor::uninitialized({B, H})};   // each written in full below
  step_backward(B, H, cache.gates.data(), cache.c.data(), cache.c_next.data(), data_or_null(dh_next), nullptr,
                data_or_null(dc_next), g.dgates_x.data(), g.dc.data(), W_hh.data(), g.dh.data(), cache.h.data(),
                dW_hh.data());
  return g;
}

void lstm_rows_forward(int64_t B, int64_t H, const float* h_prev, const Tensor& W_hh, float* gates, const float* c_prev,
                       float* c_next, float* h_next) {
  check_recurrent_weights(W_hh, H, "lstm_rows_forward: W_hh [4H, H]");
  if (h_prev != nullptr)   // gates += h_prev W_hh^T
    linear_rows_forward(h_prev, H, B, W_hh, /*col=*/0, H, /*b=*/nullptr, 1.0f, gates, 4 * H);
  for (int64_t b = 0; b < B; ++b)
    forward_row(H, /*a=*/nullptr, gates + b * 4 * H, c_prev + b * H, c_next + b * H, h_next + b * H);
}

void lstm_rows_backward(int64_t B, int64_t H, const float* gates, const float* c_prev, const float* c_next,
                        const float* dh_a, const float* dh_b, float* dc, float* dgates, const Tensor& W_hh,
                        float* dh_prev) {
  check_recurrent_weights(W_hh, H, "lstm_rows_backward: W_hh [4H, H]");
  for (int64_t b = 0; b < B; ++b)
    backward_row(H, gates + b * 4 * H, c_prev + b * H, c_next + b * H, dh_a + b * H, dh_b + b * H, dc + b * H,
                 dgates + b * 4 * H, dc + b * H);
  if (dh_prev != nullptr)   // dh_prev = dgates W_hh, once every row has read dh_a and dh_b
    linear_rows_backward_input(dgates, 4 * H, B, W_hh, /*col=*/0, H, 0.0f, dh_prev, H);
}

LstmLayerOutput lstm_layer_forward(const Tensor& x, const Tensor& h0, const Tensor& c0,
                                   const Tensor& W_ih, const Tensor& W_hh, const Tensor& b,
                                   LstmLayerCache* cache) {
  check_tensor(x, {kAny, kAny, kAny}, "lstm_layer: x [T, B, I]");
  const int64_t T = x.dim(0), B = x.dim(1), I = x.dim(2);
  check_tensor(h0, {B, kAny}, "lstm_layer: h0 [B, H]");
  const int64_t H = h0.dim(1);
  check_tensor(c0, {B, H}, "lstm_layer: c0 [B, H]");
  check_tensor(W_ih, {4 * H, I}, "lstm_layer: W_ih [4H, I]");
  check_tensor(W_hh, {4 * H, H}, "lstm_layer: W_hh [4H, H]");
  check_tensor(b, {4 * H}, "lstm_layer: b [4H]");

  // gates[t] = x_t W_ih^T for all steps in one GEMM; each step adds h W_hh^T to its slice and
  // the bias in the fused pass.
  Tensor gates = Tensor::uninitialized({T, B, 4 * H});
  float* G = gates.data();
  blas::gemm(Trans::N, Trans::T, T * B, 4 * H, I, 1.0f, x.data(), I, W_ih.data(), I, 0.0f, G,
             4 * H);

  Tensor hs = Tensor::uninitialized({T + 1, B, H}), cs = Tensor::uninitialized({T + 1, B, H});
  hs[0].copy_from(h0);
  cs[0].copy_from(c0);
  float* Hs = hs.data();
  float* Cs = cs.data();
  const int64_t step = B * H;
  for (int64_t t = 0; t < T; ++t) {
    step_forward(B, H, Hs + t * step, W_hh.data(), 1.0f, b.data(), 0, G + t * B * 4 * H, Cs + t * step,
                 Cs + (t + 1) * step, Hs + (t + 1) * step);   // step t waits for step t-1
  }
  if (cache) *cache = {x, hs, cs, gates};
  return {hs.rows(1, T + 1), hs[T], cs[T]};
}

LstmLayerGrads lstm_layer_backward(const Tensor& dy, const Tensor& dh_T, const Tensor& dc_T,
                                   const Tensor& W_ih, const Tensor& W_hh,
                                   const LstmLayerCache& cache, Tensor& dW_ih, Tensor& dW_hh,
                                   Tensor& db) {
  const int64_t T = cache.x.dim(0), B = cache.x.dim(1), I = cache.x.dim(2);
  const int64_t H = cache.hs.dim(2);
  if (dy.defined()) check_tensor(dy, {T, B, H}, "lstm_layer_backward: dy [T, B, H]");
  if (dh_T.defined()) check_tensor(dh_T, {B, H}, "lstm_layer_backward: dh_T [B, H]");
  if (dc_T.defined()) check_tensor(dc_T, {B, H}, "lstm_layer_backward: dc_T [B, H]");
  check_tensor(W_ih, {4 * H, I}, "lstm_layer_backward: W_ih [4H, I]");
  check_tensor(W_hh, {4 * H, H}, "lstm_layer_backward: W_hh [4H, H]");
  check_tensor(dW_ih, {4 * H, I}, "lstm_layer_backward: dW_ih [4H, I]");
  check_tensor(dW_hh, {4 * H, H}, "lstm_layer_backward: dW_hh [4H, H]");
  check_tensor(db, {4 * H}, "lstm_layer_backward: db [4H]");

  // Carried across steps: dh (gradient reaching h_t from step t+1) and dc (likewise for c_t).
  LstmLayerGrads g{Tensor::uninitialized({T, B, I}), Tensor({B, H}), Tensor({B, H})};   // dx: one GEMM at the end
  Tensor& dh = g.dh0;
  Tensor& dc = g.dc0;
  if (dh_T.defined()) dh.copy_from(dh_T);
  if (dc_T.defined()) dc.copy_from(dc_T);
  Tensor dgates = Tensor::uninitialized({T, B, 4 * H});   // every step writes its slice in full
  float* dG = dgates.data();
  const float* G = cache.gates.data();
  const float* Cs = cache.cs.data();
  const float* dY = data_or_null(dy);
  const int64_t step = B * H;
  for (int64_t t = T - 1; t >= 0; --t) {
    // Step t waits for step t+1; W_hh's gradient waits for all T steps (one product below).
    step_backward(B, H, G + t * B * 4 * H, Cs + t * step, Cs + (t + 1) * step, dY ? dY + t * step : nullptr,
                  dh.data(), dc.data(), dG + t * B * 4 * H, dc.data(), W_hh.data(), dh.data(), nullptr, nullptr);
  }
  // Parameter gradients over all T*B rows at once; h_0 ... h_{T-1} are rows [0, T*B) of hs.
  blas::gemm(Trans::T, Trans::N, 4 * H, H, T * B, 1.0f, dG, 4 * H, cache.hs.data(), H, 1.0f,
             dW_hh.data(), H);
  blas::gemm(Trans::T, Trans::N, 4 * H, I, T * B, 1.0f, dG, 4 * H, cache.x.data(), I, 1.0f,
             dW_ih.data(), I);
  add_column_sums(T * B, 4 * H, dG, db.data());
  blas::gemm(Trans::N, Trans::N, T * B, I, 4 * H, 1.0f, dG, 4 * H, W_ih.data(), I, 0.0f,
             g.dx.data(), I);
  return g;
}

}  // namespace attn::ops

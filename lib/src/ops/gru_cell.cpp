// GRU cell and layer: per step one GEMM for h W_hh^T + b_hh on the whole batch, then one fused
// elementwise pass, both in one parallel region (step_forward and step_backward below, shared by
// the cell and the layer).
#include "attn/ops/gru_cell.hpp"

#include <algorithm>
#include <cmath>

#include "attn/blas/blas.hpp"
#include "attn/core/flops.hpp"
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

// One batch row of step_forward's pass below, cloned for AVX2 (vector_clones.hpp).
ATTN_VECTOR_CLONES
void forward_row(int64_t H, const float* x, float* g, const float* hp, float* hnext) {
#pragma omp simd   // the row is contiguous: one vector lane per hidden unit
  for (int64_t j = 0; j < H; ++j) {
    const float r = sigmoid_fast(x[j] + g[j]);
    const float z = sigmoid_fast(x[H + j] + g[H + j]);
    const float h_n = g[2 * H + j];
    const float n = tanh_fast(x[2 * H + j] + r * h_n);
    g[j] = r;
    g[H + j] = z;
    g[2 * H + j] = n;
    hnext[j] = (1.0f - z) * n + z * hp[j];
  }
}

// One step's forward in one parallel region (core/team.hpp): gates [B, 3H], holding b_hh, plus
// h W_hh^T (split as blas::gemm splits it); then, once all of it is in, the fused pass over the
// rows with gx [B, 3H], the input projection: gates activated in place to r, z, n, and
// h_next = (1 - z) n + z h_prev; when hn is not null, hn = the incoming W_hn h + b_hn (which
// backward needs).
void step_forward(int64_t B, int64_t H, const float* h_prev, const float* W_hh, const float* gx, float* gates,
                  float* h_next, float* hn) {
  flops::add_sequential_steps(1);
  const blas::SplitGemm product(Trans::N, Trans::T, B, 3 * H, H, 1.0f, h_prev, H, W_hh, H, 1.0f, gates, 3 * H);
  product_then_rows(product, B, H, [&](int64_t b) {
    float* g = gates + b * 3 * H;
    if (hn) std::copy(g + 2 * H, g + 3 * H, hn + b * H);   // before n overwrites it
    forward_row(H, gx + b * 3 * H, g, h_prev + b * H, h_next + b * H);
  });
}

// One batch row of step_backward's pass below (row pointers; dh_a and dh_b may be null).
void backward_row(int64_t H, const float* g, const float* hn, const float* hp, const float* dh_a, const float* dh_b,
                  float* dx, float* dg, float* dh_prev) {
  for (int64_t j = 0; j < H; ++j) {
    const float r = g[j], z = g[H + j], n = g[2 * H + j];
    const float dh = (dh_a ? dh_a[j] : 0.0f) + (dh_b ? dh_b[j] : 0.0f);
    const float dn = dh * (1.0f - z) * (1.0f - n * n);
    const float dr = dn * hn[j] * r * (1.0f - r);
    const float dz = dh * (hp[j] - n) * z * (1.0f - z);
    dx[j] = dg[j] = dr;
    dx[H + j] = dg[H + j] = dz;
    dx[2 * H + j] = dn;
    dg[2 * H + j] = dn * r;
    dh_prev[j] = dh * z;
  }
}

// One step's backward in one parallel region. First the fused pass over the rows: with
// dh = dh_a + dh_b (either may be null), writes dgx [B, 3H] (gradient of gates_x), dgh [B, 3H]
// (gradient of h W_hh^T + b_hh) and dh_prev = dh z (may alias dh_a or dh_b: each element is read
// first). Then, once all of dgh is in, dh_prev += dgh W_hh and, when dW_hh is not null,
// dW_hh += dgh^T h_prev, each split as blas::gemm splits it.
void step_backward(int64_t B, int64_t H, const float* gates, const float* hn, const float* h_prev, const float* dh_a,
                   const float* dh_b, float* dgx, float* dgh, float* dh_prev, const float* W_hh, float* dW_hh) {
  flops::add_sequential_steps(1);
  const blas::SplitGemm dh_product(Trans::N, Trans::N, B, H, 3 * H, 1.0f, dgh, 3 * H, W_hh, H, 1.0f, dh_prev, H);
  // Without dW_hh an empty product (M = 0): no parts' work, no multiply-adds counted.
  const blas::SplitGemm dW_product(Trans::T, Trans::N, dW_hh ? 3 * H : 0, H, B, 1.0f, dgh, 3 * H, h_prev, H, 1.0f,
                                   dW_hh, H);
  const auto row_of = [H](const float* p, int64_t b) { return p ? p + b * H : nullptr; };
  rows_then_products(B, H, [&](int64_t b) {
    backward_row(H, gates + b * 3 * H, hn + b * H, h_prev + b * H, row_of(dh_a, b), row_of(dh_b, b), dgx + b * 3 * H,
                 dgh + b * 3 * H, dh_prev + b * H);
  }, dh_product, dW_product);
}

// Every row of the [rows, cols] block `out` set to `bias`.
void fill_rows(int64_t rows, int64_t cols, const float* bias, float* out) {
  for (int64_t r = 0; r < rows; ++r) std::copy(bias, bias + cols, out + r * cols);
}

}  // namespace

Tensor gru_cell_forward(const Tensor& gates_x, const Tensor& h, const Tensor& W_hh,
                        const Tensor& b_hh, GruCellCache* cache) {
  check_tensor(h, {kAny, kAny}, "gru_cell: h [B, H]");
  const int64_t B = h.dim(0), H = h.dim(1);
  check_tensor(gates_x, {B, 3 * H}, "gru_cell: gates_x [B, 3H]");
  check_tensor(W_hh, {3 * H, H}, "gru_cell: W_hh [3H, H]");
  check_tensor(b_hh, {3 * H}, "gru_cell: b_hh [3H]");

  Tensor gates({B, 3 * H});   // h W_hh^T + b_hh, then the activated gates
  fill_rows(B, 3 * H, b_hh.data(), gates.data());
  Tensor h_next({B, H});
  Tensor hn = cache ? Tensor({B, H}) : Tensor();
  step_forward(B, H, h.data(), W_hh.data(), gates_x.data(), gates.data(), h_next.data(), cache ? hn.data() : nullptr);
  if (cache) *cache = {h, gates, hn};
  return h_next;
}

GruCellGrads gru_cell_backward(const Tensor& dh_next, const Tensor& W_hh, const GruCellCache& cache,
                               Tensor& dW_hh, Tensor& db_hh) {
  const int64_t B = cache.h.dim(0), H = cache.h.dim(1);
  check_tensor(dh_next, {B, H}, "gru_cell_backward: dh_next [B, H]");
  check_tensor(W_hh, {3 * H, H}, "gru_cell_backward: W_hh [3H, H]");
  check_tensor(dW_hh, {3 * H, H}, "gru_cell_backward: dW_hh [3H, H]");
  check_tensor(db_hh, {3 * H}, "gru_cell_backward: db_hh [3H]");

  GruCellGrads g{Tensor({B, 3 * H}), Tensor({B, H})};
  Tensor dgh({B, 3 * H});
  step_backward(B, H, cache.gates.data(), cache.hn.data(), cache.h.data(), dh_next.data(), nullptr,
                g.dgates_x.data(), dgh.data(), g.dh.data(), W_hh.data(), dW_hh.data());
  add_column_sums(B, 3 * H, dgh.data(), db_hh.data());
  return g;
}

GruLayerOutput gru_layer_forward(const Tensor& x, const Tensor& h0, const Tensor& W_ih,
                                 const Tensor& W_hh, const Tensor& b_ih, const Tensor& b_hh,
                                 GruLayerCache* cache) {
  check_tensor(x, {kAny, kAny, kAny}, "gru_layer: x [T, B, I]");
  const int64_t T = x.dim(0), B = x.dim(1), I = x.dim(2);
  check_tensor(h0, {B, kAny}, "gru_layer: h0 [B, H]");
  const int64_t H = h0.dim(1);
  check_tensor(W_ih, {3 * H, I}, "gru_layer: W_ih [3H, I]");
  check_tensor(W_hh, {3 * H, H}, "gru_layer: W_hh [3H, H]");
  check_tensor(b_ih, {3 * H}, "gru_layer: b_ih [3H]");
  check_tensor(b_hh, {3 * H}, "gru_layer: b_hh [3H]");

  // gx[t] = x_t W_ih^T + b_ih for all steps in one GEMM; every gates[t] starts as b_hh.
  Tensor gx({T, B, 3 * H}), gates({T, B, 3 * H});
  fill_rows(T * B, 3 * H, b_ih.data(), gx.data());
  blas::gemm(Trans::N, Trans::T, T * B, 3 * H, I, 1.0f, x.data(), I, W_ih.data(), I, 1.0f,
             gx.data(), 3 * H);
  fill_rows(T * B, 3 * H, b_hh.data(), gates.data());

  Tensor hs({T + 1, B, H});
  hs[0].copy_from(h0);
  Tensor hn = cache ? Tensor({T, B, H}) : Tensor();
  float* Hs = hs.data();
  const int64_t step = B * H, gstep = B * 3 * H;
  for (int64_t t = 0; t < T; ++t) {
    step_forward(B, H, Hs + t * step, W_hh.data(), gx.data() + t * gstep, gates.data() + t * gstep,
                 Hs + (t + 1) * step, cache ? hn.data() + t * step : nullptr);   // step t waits for step t-1
  }
  if (cache) *cache = {x, hs, gates, hn};
  return {hs.rows(1, T + 1), hs[T]};
}

GruLayerGrads gru_layer_backward(const Tensor& dy, const Tensor& dh_T, const Tensor& W_ih,
                                 const Tensor& W_hh, const GruLayerCache& cache, Tensor& dW_ih,
                                 Tensor& dW_hh, Tensor& db_ih, Tensor& db_hh) {
  const int64_t T = cache.x.dim(0), B = cache.x.dim(1), I = cache.x.dim(2);
  const int64_t H = cache.hs.dim(2);
  if (dy.defined()) check_tensor(dy, {T, B, H}, "gru_layer_backward: dy [T, B, H]");
  if (dh_T.defined()) check_tensor(dh_T, {B, H}, "gru_layer_backward: dh_T [B, H]");
  check_tensor(W_ih, {3 * H, I}, "gru_layer_backward: W_ih [3H, I]");
  check_tensor(W_hh, {3 * H, H}, "gru_layer_backward: W_hh [3H, H]");
  check_tensor(dW_ih, {3 * H, I}, "gru_layer_backward: dW_ih [3H, I]");
  check_tensor(dW_hh, {3 * H, H}, "gru_layer_backward: dW_hh [3H, H]");
  check_tensor(db_ih, {3 * H}, "gru_layer_backward: db_ih [3H]");
  check_tensor(db_hh, {3 * H}, "gru_layer_backward: db_hh [3H]");

  // dh carries the gradient reaching h_t from step t+1.
  GruLayerGrads g{Tensor({T, B, I}), Tensor({B, H})};
  Tensor& dh = g.dh0;
  if (dh_T.defined()) dh.copy_from(dh_T);
  Tensor dgx({T, B, 3 * H}), dgh({T, B, 3 * H});
  const float* dY = data_or_null(dy);
  const float* Hs = cache.hs.data();
  const int64_t step = B * H, gstep = B * 3 * H;
  for (int64_t t = T - 1; t >= 0; --t) {
    // Step t waits for step t+1; W_hh's gradient waits for all T steps (one product below).
    step_backward(B, H, cache.gates.data() + t * gstep, cache.hn.data() + t * step, Hs + t * step,
                  dY ? dY + t * step : nullptr, dh.data(), dgx.data() + t * gstep, dgh.data() + t * gstep, dh.data(),
                  W_hh.data(), nullptr);
  }
  // Parameter gradients over all T*B rows at once; h_0 ... h_{T-1} are rows [0, T*B) of hs.
  blas::gemm(Trans::T, Trans::N, 3 * H, H, T * B, 1.0f, dgh.data(), 3 * H, Hs, H, 1.0f,
             dW_hh.data(), H);
  add_column_sums(T * B, 3 * H, dgh.data(), db_hh.data());
  blas::gemm(Trans::T, Trans::N, 3 * H, I, T * B, 1.0f, dgx.data(), 3 * H, cache.x.data(), I,
             1.0f, dW_ih.data(), I);
  add_column_sums(T * B, 3 * H, dgx.data(), db_ih.data());
  blas::gemm(Trans::N, Trans::N, T * B, I, 3 * H, 1.0f, dgx.data(), 3 * H, W_ih.data(), I, 0.0f,
             g.dx.data(), I);
  return g;
}

}  // namespace attn::ops

// nn::Rnn: a GRU or LSTM chosen at run time, over the cell and layer ops.
#include "attn/nn/rnn.hpp"

#include <algorithm>
#include <cmath>

#include "attn/blas/blas.hpp"
#include "attn/core/enum_names.hpp"

namespace attn::nn {

using blas::Trans;

namespace {
constexpr EnumNames<RnnCell, 2> kCellNames{{{RnnCell::gru, "gru"}, {RnnCell::lstm, "lstm"}}};
}  // namespace

RnnCell parse_rnn_cell(const std::string& name) { return parse_enum(kCellNames, "cell", name); }
const char* rnn_cell_name(RnnCell cell) { return enum_name(kCellNames, cell); }

Rnn::Rnn(RnnCell cell, int64_t input, int64_t hidden, const std::string& name, Rng& rng) : cell_(cell) {
  const int64_t G = (cell == RnnCell::gru ? 3 : 4) * hidden;
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden));
  W_ih = Param(name + "/W_ih", rand_uniform({G, input}, rng, -bound, bound));
  W_hh = Param(name + "/W_hh", rand_uniform({G, hidden}, rng, -bound, bound));
  if (cell == RnnCell::gru) {
    b_ih = Param(name + "/b_ih", rand_uniform({G}, rng, -bound, bound));
    b_hh = Param(name + "/b_hh", rand_uniform({G}, rng, -bound, bound));
  } else {
    b_ih = Param(name + "/b", rand_uniform({G}, rng, -bound, bound));
  }
}

ParamList Rnn::params() {
  if (cell_ == RnnCell::gru) return {&W_ih, &W_hh, &b_ih, &b_hh};
  return {&W_ih, &W_hh, &b_ih};
}

void Rnn::project(const float* x, int64_t ldx, int64_t N, int64_t col, int64_t width, bool with_bias, float beta,
                  float* gx) const {
  const int64_t G = gates(), I = input();
  if (width > 0)
    blas::gemm(Trans::N, Trans::T, N, G, width, 1.0f, x, ldx, W_ih.value.data() + col, I, beta, gx, G);
  else if (beta == 0.0f)
    std::fill(gx, gx + N * G, 0.0f);
  if (!with_bias) return;
  const float* b = b_ih.value.data();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) gx[n * G + g] += b[g];
}

void Rnn::project_backward(const float* dgx, int64_t N, const float* x, int64_t ldx, int64_t col, int64_t width,
                           bool with_bias, float* dx, int64_t lddx) {
  const int64_t G = gates(), I = input();
  if (width > 0) {
    // dW_ih[:, col:] += dgx^T x;  dx += dgx W_ih[:, col:]
    blas::gemm(Trans::T, Trans::N, G, width, N, 1.0f, dgx, G, x, ldx, 1.0f, W_ih.grad.data() + col, I);
    if (dx != nullptr)
      blas::gemm(Trans::N, Trans::N, N, width, G, 1.0f, dgx, G, W_ih.value.data() + col, I, 1.0f, dx, lddx);
  }
  if (!with_bias) return;
  float* db = b_ih.grad.data();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) db[g] += dgx[n * G + g];
}

RnnState Rnn::zero_state(int64_t B) const {
  RnnState s{Tensor({B, hidden()}), Tensor()};
  if (cell_ == RnnCell::lstm) s.c = Tensor({B, hidden()});
  return s;
}

RnnState Rnn::step(const Tensor& gx, const RnnState& s, RnnStepCache* cache) const {
  if (cell_ == RnnCell::gru)
    return {ops::gru_cell_forward(gx, s.h, W_hh.value, b_hh.value, cache ? &cache->gru : nullptr), Tensor()};
  ops::LstmState next = ops::lstm_cell_forward(gx, s.h, s.c, W_hh.value, cache ? &cache->lstm : nullptr);
  return {next.h, next.c};
}

Tensor Rnn::step_backward(const RnnState& dnext, const RnnStepCache& cache, RnnState& dprev) {
  if (cell_ == RnnCell::gru) {
    ops::GruCellGrads g = ops::gru_cell_backward(dnext.h, W_hh.value, cache.gru, W_hh.grad, b_hh.grad);
    dprev.h = g.dh;
    return g.dgates_x;
  }
  ops::LstmCellGrads g = ops::lstm_cell_backward(dnext.h, dnext.c, W_hh.value, cache.lstm, W_hh.grad);
  dprev.h = g.dh;
  dprev.c = g.dc;
  return g.dgates_x;
}

Tensor Rnn::layer(const Tensor& x, RnnLayerCache* cache) const {
  const int64_t B = x.dim(1);
  const RnnState s0 = zero_state(B);
  if (cell_ == RnnCell::gru)
    return ops::gru_layer_forward(x, s0.h, W_ih.value, W_hh.value, b_ih.value, b_hh.value,
                                  cache ? &cache->gru : nullptr).y;
  return ops::lstm_layer_forward(x, s0.h, s0.c, W_ih.value, W_hh.value, b_ih.value, cache ? &cache->lstm : nullptr)
      .y;
}

Tensor Rnn::layer_backward(const Tensor& dy, const RnnLayerCache& cache) {
  if (cell_ == RnnCell::gru)
    return ops::gru_layer_backward(dy, Tensor(), W_ih.value, W_hh.value, cache.gru, W_ih.grad, W_hh.grad,
                                   b_ih.grad, b_hh.grad)
        .dx;
  return ops::lstm_layer_backward(dy, Tensor(), Tensor(), W_ih.value, W_hh.value, cache.lstm, W_ih.grad,
                                  W_hh.grad, b_ih.grad)
      .dx;
}

}  // namespace attn::nn

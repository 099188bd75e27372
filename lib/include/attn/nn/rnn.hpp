// nn::Rnn: a recurrent layer with its parameters, one GRU or LSTM chosen at run time, over the
// cell and layer ops of ops/gru_cell.hpp and ops/lstm_cell.hpp. The RNN encoder-decoder, the
// NTM's controller and the captioner's decoder are built from it: a whole sequence at once
// (`layer`) when the input of every step is known in advance, one `step` at a time when it
// depends on the previous step (attention contexts, memory reads).
//
// The input projection W_ih may be wider than the part the caller precomputes: a decoder whose
// input is [e_t; c_t] precomputes e W_ih[:, :E]^T + b for all steps in ONE GEMM and adds the
// per-step part c_t W_ih[:, E:]^T with one GEMM per step. `project` does either part on any
// column block, so W_ih stays one [G, I] matrix laid out like torch.nn.GRU/LSTM's weight_ih.
#pragma once
#include <cstdint>
#include <string>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/param.hpp"
#include "attn/ops/gru_cell.hpp"
#include "attn/ops/lstm_cell.hpp"

namespace attn::nn {

enum class RnnCell : uint8_t { gru, lstm };
// "gru", "lstm"; parsing anything else throws ConfigError listing both.
RnnCell parse_rnn_cell(const std::string& name);
const char* rnn_cell_name(RnnCell cell);

// The recurrent state: h [B, H], and c [B, H] for an LSTM (undefined for a GRU).
struct RnnState {
  Tensor h, c;
};

struct RnnStepCache {
  ops::GruCellCache gru;
  ops::LstmCellCache lstm;
};

struct RnnLayerCache {
  ops::GruLayerCache gru;
  ops::LstmLayerCache lstm;
};

class Rnn {
 public:
  Rnn() = default;
  // W_ih: [G, I], W_hh: [G, H] with G = 3H (GRU) or 4H (LSTM); biases b_ih, b_hh (GRU) or one
  // bias b (LSTM, "<name>/b"). All ~ U(-1/sqrt(H), 1/sqrt(H)) as in PyTorch.
  Rnn(RnnCell cell, int64_t input, int64_t hidden, const std::string& name, Rng& rng);

  RnnCell cell() const { return cell_; }
  int64_t hidden() const { return W_hh.value.dim(1); }
  int64_t input() const { return W_ih.value.dim(1); }
  int64_t gates() const { return W_hh.value.dim(0); }   // G
  ParamList params();

  // gx[T*B, G] = beta * gx + x W_ih[:, col : col + width]^T (+ the input bias when with_bias),
  // over the N rows given (all steps: T*B). x: [T*B, width] with row stride ldx. One GEMM.
  void project(const float* x, int64_t ldx, int64_t N, int64_t col, int64_t width, bool with_bias,
               float beta, float* gx) const;
  // The gradient of `project`: dW_ih[:, col : col + width] += dgx^T x (+ db = column sums of
  // dgx when with_bias); when dx is non-null, dx[T*B, width] (row stride lddx) += dgx W_ih[:, col..].
  void project_backward(const float* dgx, int64_t N, const float* x, int64_t ldx, int64_t col, int64_t width,
                        bool with_bias, float* dx, int64_t lddx);

  RnnState zero_state(int64_t B) const;
  // One step: gx [B, G] already holds the input projection (with the input bias).
  RnnState step(const Tensor& gx, const RnnState& s, RnnStepCache* cache) const;
  // dnext: gradient w.r.t. the step's output state (dnext.c may be undefined). Returns
  // dgx [B, G] (fresh); overwrites dprev with the gradient w.r.t. the input state. Adds into
  // W_hh's (and the GRU's b_hh's) grads; the input projection's grads are the caller's.
  Tensor step_backward(const RnnState& dnext, const RnnStepCache& cache, RnnState& dprev);

  // A whole sequence from a zero state, x: [T, B, I] -> y: [T, B, H] (one GEMM for the input
  // projection of all steps; the layer ops).
  Tensor layer(const Tensor& x, RnnLayerCache* cache) const;
  // dy: [T, B, H] -> dx: [T, B, I]; adds into every param grad.
  Tensor layer_backward(const Tensor& dy, const RnnLayerCache& cache);

  Param W_ih, W_hh, b_ih, b_hh;   // LSTM: b_ih is the single bias b, b_hh is unused

 private:
  RnnCell cell_ = RnnCell::gru;
};

}  // namespace attn::nn

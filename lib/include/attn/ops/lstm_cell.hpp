// The LSTM cell and a whole-sequence LSTM layer, as forward/backward pairs.
//
// Gates follow PyTorch's order and formulation (torch.nn.LSTM), so weights load unchanged:
//   [i, f, g, o] = gates_x + h W_hh^T             gates_x = x W_ih^T + b   (both [B, 4H])
//   i = σ(i), f = σ(f), g = tanh(g), o = σ(o)
//   c' = f ⊙ c + i ⊙ g,   h' = o ⊙ tanh(c')
// PyTorch's two biases b_ih + b_hh are one bias b here (add them when importing weights).
//
// The input projection is split off the step: a caller that knows a whole input sequence
// computes gates_x for all T steps in ONE GEMM ([T*B, I] x [I, 4H]), and each step then costs
// one GEMM on the whole batch (h W_hh^T) plus one fused elementwise pass. `lstm_layer_*` does
// exactly that for a sequence [T, B, I]; the cell functions serve step-by-step decoders whose
// input depends on the previous step (attention feeding).
//
// Caches hold tensors that share storage with the inputs and outputs (Tensor copies are
// shallow): do not modify those in place between forward and backward.
// Reference: Hochreiter & Schmidhuber 1997; Gers et al. 2000 (forget gate); the equations of
// torch.nn.LSTM.
#pragma once
#include "attn/core/tensor.hpp"

namespace attn::ops {

struct LstmState {
  Tensor h;   // [B, H]
  Tensor c;   // [B, H]
};

struct LstmCellCache {
  Tensor h;       // [B, H] the input state h (shared)
  Tensor c;       // [B, H] the input state c (shared)
  Tensor gates;   // [B, 4H] activated gates i, f, g, o
  Tensor c_next;  // [B, H] c' (shared with the returned state)
};

// One step: returns (h', c'), each a new [B, H] tensor.
//   gates_x: [B, 4H]   h, c: [B, H]   W_hh: [4H, H]
// The only allocations are the outputs and the cache (or one [B, 4H] scratch without cache).
LstmState lstm_cell_forward(const Tensor& gates_x, const Tensor& h, const Tensor& c,
                            const Tensor& W_hh, LstmCellCache* cache);

struct LstmCellGrads {
  Tensor dgates_x;   // [B, 4H] gradient of the pre-activation gates (= d(gates_x))
  Tensor dh;         // [B, H]
  Tensor dc;         // [B, H]
};

// dh_next, dc_next: [B, H] gradients of the loss w.r.t. h' and c'; an undefined Tensor()
// stands for zeros (e.g. no loss on the last c). Returns fresh gradients w.r.t. gates_x, h
// and c; ADDS dgates_x^T h into dW_hh: [4H, H]. The caller chains dgates_x into its input
// projection (dW_ih += dgates_x^T x, db += Σ_B dgates_x, dx = dgates_x W_ih).
LstmCellGrads lstm_cell_backward(const Tensor& dh_next, const Tensor& dc_next, const Tensor& W_hh,
                                 const LstmCellCache& cache, Tensor& dW_hh);

// ---- One step on raw rows, in a caller's buffers and threads ----
// The cell for a caller that keeps a whole sequence in its own time-major buffers and runs every
// step of a block of batch rows on one thread, inside a parallel region of its own (the NTM's
// row blocks, core/row_blocks.hpp): the cell's row kernels, the recurrent product as
// ops::linear_rows_forward's (a gemv for one row), nothing allocated, no thread team, no
// sequential step counted (flops::add_sequential_steps is the caller's). W_hh's gradient is not
// formed per step: the caller forms it once over all steps,
//   dW_hh += Σ_t dgates_t^T h_{t-1}      (ops::linear_rows_backward_params over the T*B rows),
// as it does its input projection's (dW_ih += dgates^T x, db += Σ dgates).
// Every buffer is contiguous: [B, H] or [B, 4H] rows.

// gates: [B, 4H] the step's input projection (x W_ih^T + b) in; h_prev W_hh^T is added to it
// (h_prev null: the zero state, no product), then it is activated in place to i, f, g, o (what
// lstm_rows_backward reads). c_prev: [B, H] (zeros for the zero state). Writes c_next and
// h_next [B, H] (overwritten).
void lstm_rows_forward(int64_t B, int64_t H, const float* h_prev, const Tensor& W_hh, float* gates, const float* c_prev,
                       float* c_next, float* h_next);

// gates, c_prev, c_next: the forward's. dh_a, dh_b: [B, H] two gradients w.r.t. h_next, summed
// (the layer above's and the next step's); dc: [B, H] the gradient w.r.t. c_next in, w.r.t.
// c_prev out (in place). Writes dgates [B, 4H], the gradient of the pre-activation gates (the
// input projection's and the recurrent product's), and, unless dh_prev is null (the zero state:
// nothing to pass back), dh_prev = dgates W_hh [B, H], overwritten once every row has read dh_a
// and dh_b (so it may alias either).
void lstm_rows_backward(int64_t B, int64_t H, const float* gates, const float* c_prev, const float* c_next,
                        const float* dh_a, const float* dh_b, float* dc, float* dgates, const Tensor& W_hh,
                        float* dh_prev);

// A whole sequence, the input projection done once for all steps.
struct LstmLayerOutput {
  Tensor y;   // [T, B, H] h_1 ... h_T
  Tensor h;   // [B, H] h_T
  Tensor c;   // [B, H] c_T
};

struct LstmLayerCache {
  Tensor x;       // [T, B, I] (shared)
  Tensor hs;      // [T+1, B, H] h_0 ... h_T (y and the returned h are views of it)
  Tensor cs;      // [T+1, B, H] c_0 ... c_T
  Tensor gates;   // [T, B, 4H] activated gates of every step
};

// x: [T, B, I]   h0, c0: [B, H]   W_ih: [4H, I]   W_hh: [4H, H]   b: [4H]
// One GEMM for x W_ih^T + b over all T*B rows, then per step one GEMM and one fused pass.
// The outputs are views of one [T+1, B, H] block (shared with the cache when given).
LstmLayerOutput lstm_layer_forward(const Tensor& x, const Tensor& h0, const Tensor& c0,
                                   const Tensor& W_ih, const Tensor& W_hh, const Tensor& b,
                                   LstmLayerCache* cache);

struct LstmLayerGrads {
  Tensor dx;    // [T, B, I]
  Tensor dh0;   // [B, H]
  Tensor dc0;   // [B, H]
};

// dy: [T, B, H] gradient w.r.t. every output h_t; dh_T, dc_T: [B, H] gradients w.r.t. the final
// state on top of dy[T-1]. Any of the three may be an undefined Tensor() (zeros).
// Backpropagation through time; ADDS into dW_ih, dW_hh, db, each with one GEMM (or one column
// sum) over all T*B rows after the step loop. Returns fresh dx, dh0, dc0.
LstmLayerGrads lstm_layer_backward(const Tensor& dy, const Tensor& dh_T, const Tensor& dc_T,
                                   const Tensor& W_ih, const Tensor& W_hh,
                                   const LstmLayerCache& cache, Tensor& dW_ih, Tensor& dW_hh,
                                   Tensor& db);

}  // namespace attn::ops

// The GRU cell and a whole-sequence GRU layer, as forward/backward pairs.
//
// PyTorch's formulation (torch.nn.GRU), gate order r, z, n, so weights load unchanged:
//   r  = σ(W_ir x + b_ir + W_hr h + b_hr)
//   z  = σ(W_iz x + b_iz + W_hz h + b_hz)
//   n  = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
//   h' = (1 - z) ⊙ n + z ⊙ h
// The input projection gates_x = x W_ih^T + b_ih ([B, 3H]) is computed by the caller, for a
// whole sequence in ONE GEMM; the step computes h W_hh^T + b_hh with one GEMM on the whole
// batch (b_hh stays inside the step because r multiplies W_hn h + b_hn) and then one fused
// elementwise pass.
//
// Caches hold tensors that share storage with the inputs and outputs (Tensor copies are
// shallow): do not modify those in place between forward and backward.
// Reference: Cho et al. 2014, eq. (5)-(8) (with r applied after W_hn h, as cuDNN and PyTorch
// do); the equations of torch.nn.GRU.
#pragma once
#include "attn/core/tensor.hpp"

namespace attn::ops {

struct GruCellCache {
  Tensor h;       // [B, H] the input state (shared)
  Tensor gates;   // [B, 3H] activated r, z, n
  Tensor hn;      // [B, H] W_hn h + b_hn
};

// One step: returns h', a new [B, H] tensor.
//   gates_x: [B, 3H]   h: [B, H]   W_hh: [3H, H]   b_hh: [3H]
// The only allocations are the output and the cache (or one [B, 3H] scratch without cache).
Tensor gru_cell_forward(const Tensor& gates_x, const Tensor& h, const Tensor& W_hh,
                        const Tensor& b_hh, GruCellCache* cache);

struct GruCellGrads {
  Tensor dgates_x;   // [B, 3H] gradient w.r.t. gates_x
  Tensor dh;         // [B, H]
};

// dh_next: [B, H] gradient w.r.t. h'. Returns fresh gradients w.r.t. gates_x and h; ADDS into
// dW_hh: [3H, H] and db_hh: [3H]. The caller chains dgates_x into its input projection.
GruCellGrads gru_cell_backward(const Tensor& dh_next, const Tensor& W_hh, const GruCellCache& cache,
                               Tensor& dW_hh, Tensor& db_hh);

// A whole sequence, the input projection done once for all steps.
struct GruLayerOutput {
  Tensor y;   // [T, B, H] h_1 ... h_T
  Tensor h;   // [B, H] h_T
};

struct GruLayerCache {
  Tensor x;       // [T, B, I] (shared)
  Tensor hs;      // [T+1, B, H] h_0 ... h_T (y and the returned h are views of it)
  Tensor gates;   // [T, B, 3H] activated r, z, n of every step
  Tensor hn;      // [T, B, H] W_hn h_{t-1} + b_hn of every step
};

// x: [T, B, I]   h0: [B, H]   W_ih: [3H, I]   W_hh: [3H, H]   b_ih, b_hh: [3H]
// One GEMM for x W_ih^T + b_ih over all T*B rows, then per step one GEMM and one fused pass.
// The outputs are views of one [T+1, B, H] block (shared with the cache when given).
GruLayerOutput gru_layer_forward(const Tensor& x, const Tensor& h0, const Tensor& W_ih,
                                 const Tensor& W_hh, const Tensor& b_ih, const Tensor& b_hh,
                                 GruLayerCache* cache);

struct GruLayerGrads {
  Tensor dx;    // [T, B, I]
  Tensor dh0;   // [B, H]
};

// dy: [T, B, H] gradient w.r.t. every output h_t; dh_T: [B, H] gradient w.r.t. the final state
// on top of dy[T-1]. Either may be an undefined Tensor() (zeros). Backpropagation through
// time; ADDS into dW_ih, dW_hh, db_ih, db_hh, each with one GEMM (or column sum) over all T*B
// rows after the step loop. Returns fresh dx, dh0.
GruLayerGrads gru_layer_backward(const Tensor& dy, const Tensor& dh_T, const Tensor& W_ih,
                                 const Tensor& W_hh, const GruLayerCache& cache, Tensor& dW_ih,
                                 Tensor& dW_hh, Tensor& db_ih, Tensor& db_hh);

}  // namespace attn::ops

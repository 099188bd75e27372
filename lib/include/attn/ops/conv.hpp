// 1-D and 2-D convolution (cross-correlation, as in PyTorch) with stride, zero padding and
// dilation, as forward/backward pairs.
//
// Method: im2col into one [C*KH*KW, B*OH*OW] matrix holding every receptive field of the whole
// batch, then ONE GEMM W[O, C*KH*KW] x col -> [O, B*OH*OW], permuted to [B, O, OH, OW] with the
// bias added in the same pass. Backward is the same three GEMM shapes: dW += dY col^T (one GEMM
// over the whole batch, so no per-sample reduction), dcol = W^T dY, and col2im scatters dcol
// back onto dx. The column matrix is rebuilt in backward instead of cached: it is KH*KW times
// the input (for stride 1), and rebuilding it is a cheap memory pass next to the GEMMs.
// conv1d is conv2d on [B, C, 1, IW]. The multiply-adds are the GEMMs' (counted by the BLAS seam).
// Reference: Chellapilla et al. 2006 (convolution as im2col + GEMM); torch.nn.Conv1d/Conv2d.
#pragma once
#include <cstdint>
#include <string>

#include "attn/core/tensor.hpp"

namespace attn::ops {

// A per-axis pair (height, width); one value sets both axes.
struct Size2 {
  int64_t h = 0, w = 0;
  constexpr Size2(int64_t both = 0) : h(both), w(both) {}   // implicit: `stride = 2`
  constexpr Size2(int64_t h_, int64_t w_) : h(h_), w(w_) {}
  bool operator==(const Size2&) const = default;
};
std::string to_string(Size2 s);   // "(h, w)"

// Out size per axis: (in + 2 padding - dilation (kernel - 1) - 1) / stride + 1 (floor).
// conv1d takes the same struct with one value per field (Size2(2), not Size2(1, 2)).
struct ConvOptions {
  Size2 stride = 1;     // >= 1
  Size2 padding = 0;    // >= 0, zeros on both sides
  Size2 dilation = 1;   // >= 1
};

// Sizes of one convolution, worked out by forward; conv1d has IH = KH = OH = 1.
struct ConvGeometry {
  int64_t B = 0, C = 0, IH = 0, IW = 0, O = 0, KH = 0, KW = 0, OH = 0, OW = 0;
  Size2 stride, padding, dilation;
};

struct ConvCache {
  Tensor x;   // [B, C, IH, IW] the input (shared; a [B, C, 1, IW] view for conv1d)
  ConvGeometry geometry;
};

// y[b, o, i, j] = bias[o] + Σ_{c, p, q} W[o, c, p, q] x[b, c, i sh - ph + p dh, j sw - pw + q dw]
//   x: [B, C, IH, IW]   W: [O, C, KH, KW]   b: [O] or an undefined Tensor() for no bias
//   -> y: [B, O, OH, OW]
Tensor conv2d_forward(const Tensor& x, const Tensor& W, const Tensor& b, const ConvOptions& options,
                      ConvCache* cache);
// dy: [B, O, OH, OW]. ADDS into dW: [O, C, KH, KW] and db: [O] (db may be undefined: skipped).
// Returns dx: [B, C, IH, IW], a new tensor; with input_grad false an undefined Tensor, and the
// product and col2im that make dx are not done (a network's first layer: images need none).
Tensor conv2d_backward(const Tensor& dy, const Tensor& W, const ConvCache& cache, Tensor& dW,
                       Tensor& db, bool input_grad = true);

// x: [B, C, IW]   W: [O, C, K]   b: [O] or undefined   -> y: [B, O, OW]
Tensor conv1d_forward(const Tensor& x, const Tensor& W, const Tensor& b, const ConvOptions& options,
                      ConvCache* cache);
// dy: [B, O, OW]. ADDS into dW: [O, C, K] and db: [O] (may be undefined). Returns dx: [B, C, IW].
Tensor conv1d_backward(const Tensor& dy, const Tensor& W, const ConvCache& cache, Tensor& dW,
                       Tensor& db);

}  // namespace attn::ops

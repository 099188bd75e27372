// 1-D and 2-D convolution (cross-correlation, as in PyTorch) with stride, zero padding and
// dilation, as forward/backward pairs.
//
// Two methods, the same function up to float rounding:
// - im2col + GEMM (any geometry): each chunk of an image's receptive fields unfolded into a
//   [C*KH*KW, positions] matrix, W[O, C*KH*KW] times it; backward dW += dY col^T, dcol = W^T dY
//   and col2im scatters dcol back onto dx. The column matrix is rebuilt in backward, not cached.
// - Winograd's minimal filtering F(2 x 2, 3 x 3) (3 x 3 kernels, stride 1, no dilation, padding
//   <= 2): 2 x 2 output tiles from 4 x 4 input tiles, 16 products [O, C] x [C, tiles] in the
//   transformed domain, 2.25 times fewer multiply-adds than im2col's (conv_winograd.cpp).
// ConvOptions::algorithm chooses; kAuto takes Winograd where it applies and C, O >= 16.
// conv1d is conv2d on [B, C, 1, IW]. The multiply-adds are the GEMMs' (counted by the BLAS seam).
// References: Chellapilla et al. 2006 (im2col + GEMM); Lavin & Gray 2016, "Fast Algorithms for
// Convolutional Neural Networks" (Winograd); torch.nn.Conv1d/Conv2d.
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

// kAuto: Winograd where it applies (see above) and both C and O are at least 16 (narrower, its
// 16 products are too thin for sgemm to run well); im2col + GEMM elsewhere. kWinograd where it
// does not apply is a ConfigError. Tests force one or the other to compare them.
enum class ConvAlgorithm { kAuto, kIm2col, kWinograd };

// Out size per axis: (in + 2 padding - dilation (kernel - 1) - 1) / stride + 1 (floor).
// conv1d takes the same struct with one value per field (Size2(2), not Size2(1, 2)).
struct ConvOptions {
  Size2 stride = 1;     // >= 1
  Size2 padding = 0;    // >= 0, zeros on both sides
  Size2 dilation = 1;   // >= 1
  ConvAlgorithm algorithm = ConvAlgorithm::kAuto;
};

// Sizes of one convolution, worked out by forward; conv1d has IH = KH = OH = 1.
struct ConvGeometry {
  int64_t B = 0, C = 0, IH = 0, IW = 0, O = 0, KH = 0, KW = 0, OH = 0, OW = 0;
  Size2 stride, padding, dilation;
  bool winograd = false;   // the method forward chose; backward follows it
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

// Max and average pooling, 1-D ([B, C, IW]) and 2-D ([B, C, IH, IW]), as forward/backward pairs.
//
// Conventions are PyTorch's defaults (torch.nn.MaxPool2d / AvgPool2d, ceil_mode=false):
// - out size per axis = (in + 2 padding - kernel) / stride + 1 (floor); stride defaults to the
//   kernel; padding <= kernel / 2, so every window holds at least one real element.
// - Max pooling pads with -inf; forward records the argmax of each window (the first maximum;
//   a NaN wins and propagates) and backward routes the gradient there.
// - Average pooling counts the zero padding (count_include_pad=true): every window divides by
//   KH*KW, also at the borders. It adds B*C*OH*OW*KH*KW multiply-adds to the flops counter per
//   pass (it is a depthwise convolution with a constant kernel); max pooling adds none.
// 1-D pooling is 2-D pooling on [B, C, 1, IW].
#pragma once
#include "attn/core/tensor.hpp"
#include "attn/ops/conv.hpp"   // Size2

namespace attn::ops {

struct PoolOptions {
  Size2 kernel = 0;    // >= 1; no default
  Size2 stride = 0;    // 0: equal to the kernel (PyTorch's default)
  Size2 padding = 0;   // 0 <= padding <= kernel / 2
};

// Sizes of one pooling, worked out by forward (stride resolved); 1-D has IH = OH = 1.
struct PoolGeometry {
  int64_t B = 0, C = 0, IH = 0, IW = 0, OH = 0, OW = 0;
  Size2 kernel, stride, padding;
};

struct MaxPoolCache {
  PoolGeometry geometry;
  Tensor argmax;   // int32 [B, C, OH, OW]: index ih*IW + iw of each window's maximum
};
struct AvgPoolCache {
  PoolGeometry geometry;
};

// y[b, c, i, j] = max over the window at (i sh - ph, j sw - pw).   x: [B, C, IH, IW] -> [B, C, OH, OW]
Tensor max_pool2d_forward(const Tensor& x, const PoolOptions& options, MaxPoolCache* cache);
// dy: [B, C, OH, OW] -> dx: [B, C, IH, IW] (new), dy routed to each window's argmax.
Tensor max_pool2d_backward(const Tensor& dy, const MaxPoolCache& cache);

// y[b, c, i, j] = (1 / (KH KW)) Σ over the window (zeros in the padding count).
Tensor avg_pool2d_forward(const Tensor& x, const PoolOptions& options, AvgPoolCache* cache);
// dy: [B, C, OH, OW] -> dx: [B, C, IH, IW] (new).
Tensor avg_pool2d_backward(const Tensor& dy, const AvgPoolCache& cache);

// The same on x: [B, C, IW] -> [B, C, OW]; options take one value per field.
Tensor max_pool1d_forward(const Tensor& x, const PoolOptions& options, MaxPoolCache* cache);
Tensor max_pool1d_backward(const Tensor& dy, const MaxPoolCache& cache);
Tensor avg_pool1d_forward(const Tensor& x, const PoolOptions& options, AvgPoolCache* cache);
Tensor avg_pool1d_backward(const Tensor& dy, const AvgPoolCache& cache);

}  // namespace attn::ops

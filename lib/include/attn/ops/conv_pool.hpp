// A convolution and the 2 x 2 max pooling at stride 2 after it (the "conv, pool2" block of small
// CNNs) as one op: y = max_pool2d(conv2d(x, W, b), kernel 2), forward and backward.
//
// Why fused: the convolution's output is four times the pooled one, and a network's first layer
// makes the largest of all (the captioner's 1 x 32 x 160 strips: 21 MB a batch of 32 at 32
// channels). Run as two ops it is written, read back by the pooling, and in backward written again
// as a mostly-zero gradient and read by the convolution's. Here each pair of output rows lives
// in a few KiB of cache from the moment it is computed to the moment it is pooled, and in backward
// the pooled gradient is spread back over a pair of rows only where the weight gradient reads it.
//
// Method: where the convolution has stride 1, no dilation, at most 27 taps per output (C KH KW:
// a grey or RGB image's first layer) and at least 8 pooling windows per row, it is computed
// directly: 8 windows at a time, a window's four outputs in four vectors of sums held in
// registers and pooled there (the input's columns are split by parity so that each vector reads
// consecutive floats). As a GEMM its products would have K = C KH KW <= 27, the shape at which
// sgemm runs at a fraction of its speed (bench/README.md, "Convolution: im2col chunks, Winograd,
// conv0 fused with its pooling"). Elsewhere (and whenever
// ConvOptions::algorithm names a method) the op runs conv2d then max_pool2d, with the same results
// up to float rounding. The pooling's rules are max_pool2d's: the first maximum of each window, a
// NaN winning; an odd height's last row or width's last column is in no window.
#pragma once
#include "attn/core/tensor.hpp"
#include "attn/ops/conv.hpp"
#include "attn/ops/pool.hpp"

namespace attn::ops {

struct ConvPoolCache {
  ConvCache conv;      // the convolution's input and geometry
  MaxPoolCache pool;   // the pooling's geometry (over the convolution's output) and argmax
  bool direct = false;   // computed directly (fused), or as conv2d then max_pool2d
};

// x: [B, C, IH, IW]   W: [O, C, KH, KW]   b: [O] or undefined   -> y: [B, O, OH / 2, OW / 2]
// for the convolution's output size OH x OW (conv.hpp), which must be at least 2 x 2.
Tensor conv2d_max_pool2_forward(const Tensor& x, const Tensor& W, const Tensor& b, const ConvOptions& options,
                                ConvPoolCache* cache);
// dy: [B, O, OH / 2, OW / 2]. ADDS into dW [O, C, KH, KW] and db [O] (db may be undefined).
// Returns dx [B, C, IH, IW]; with input_grad false an undefined Tensor, and dx's work not done.
Tensor conv2d_max_pool2_backward(const Tensor& dy, const Tensor& W, const ConvPoolCache& cache, Tensor& dW,
                                 Tensor& db, bool input_grad = true);

}  // namespace attn::ops

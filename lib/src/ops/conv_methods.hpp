// Private to the convolution's files (conv.cpp, conv_winograd.cpp, conv_pool.cpp): the geometry
// check, the Winograd method's entry points, and the rules every method follows so that its
// results do not depend on the thread count.
#pragma once
#include <cstdint>
#include <string>

#include "attn/core/threading.hpp"
#include "attn/ops/conv.hpp"

namespace attn::ops::conv_detail {

// Checks the options against x [B, C, IH, IW] and W [O, C, KH, KW] and fills in the output size;
// `op` names the public function in messages, which speak of one length for conv1d (seen as
// [B, C, 1, IW]).
ConvGeometry make_geometry(const std::string& op, const Shape& x, const Shape& W, const ConvOptions& o);

// The weight gradient is summed in this many partial sums over fixed groups of images, added in
// order at the end, so that dW is bit-identical at any thread count (images of one group run in
// sequence on one thread).
inline constexpr int64_t kGradGroups = 4;

// Tasks share the threads one chunk (or one group of images) each, the GEMMs inside running on
// their own thread; with fewer tasks than threads the tasks run in turn and each GEMM gets all
// the threads. Either way every output element sees the same arithmetic.
inline bool spread_over_threads(int64_t tasks) {
  const int parts = num_parts();   // not the running threads: the choice changes the GEMMs' shapes
  return parts > 1 && tasks >= parts;
}

// out[e] += Σ_grp parts[grp, e], the groups added in order.   parts [groups, E]
void add_group_sums(const Tensor& parts, float* out);

// F(2 x 2, 3 x 3) computes this geometry: 3 x 3 kernel, stride 1, dilation 1, padding <= 2 on
// both axes (the input gradient is the same convolution with padding 2 - padding).
bool winograd_applies(const ConvGeometry& g);
// y [B, O, OH, OW]; bias may be undefined.
Tensor winograd_forward(const ConvGeometry& g, const Tensor& x, const Tensor& W, const Tensor& bias);
// ADDS into dW and db (db may be undefined); returns dx, or an undefined Tensor without input_grad.
Tensor winograd_backward(const ConvGeometry& g, const Tensor& x, const Tensor& W, const Tensor& dy,
                         Tensor& dW, Tensor& db, bool input_grad);

}  // namespace attn::ops::conv_detail

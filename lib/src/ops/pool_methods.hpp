// Private to pool.cpp and conv_pool.cpp: the pooling's geometry check and the rules of a 2 x 2
// max pooling window (its maximum, where its gradient goes), which the fused convolution and
// pooling applies too.
#pragma once
#include <cstdint>
#include <string>

#include "attn/ops/pool.hpp"

namespace attn::ops::pool_detail {

// Checks the options against x: [B, C, IH, IW] and fills in the output size. For 1-D ops
// (`one_d`, x seen as [B, C, 1, IW]) every field must be one value, which applies to the length.
PoolGeometry make_geometry(const std::string& op, const Shape& x, PoolOptions o, bool one_d);

// A 2 x 2 window's first maximum and where it is: v0, v1 on the upper row, v2, v3 below; code 0, 1,
// IW or IW + 1 (the offset of the maximum from v0 in a row of IW). A NaN wins (the last NaN).
// Selects, not branches, so that loops over windows vectorise.
[[gnu::always_inline]] inline void first_max4(float v0, float v1, float v2, float v3, int32_t IW, float& best,
                                              int32_t& code) {
  float m = v0;
  int32_t k = 0;
  bool take = v1 > m || v1 != v1;
  m = take ? v1 : m, k = take ? 1 : k;
  take = v2 > m || v2 != v2;
  m = take ? v2 : m, k = take ? IW : k;
  take = v3 > m || v3 != v3;
  m = take ? v3 : m, k = take ? IW + 1 : k;
  best = m, code = k;
}

// The gradient g of such a window spread over its four positions: g at the maximum (code as
// first_max4's), 0 at the others.
[[gnu::always_inline]] inline void window_gradient(float g, int32_t code, int32_t IW, float& d0, float& d1, float& d2,
                                                   float& d3) {
  d0 = code == 0 ? g : 0.0f;
  d1 = code == 1 ? g : 0.0f;
  d2 = code == IW ? g : 0.0f;
  d3 = code == IW + 1 ? g : 0.0f;
}

}  // namespace attn::ops::pool_detail

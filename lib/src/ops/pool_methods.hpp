// Private to pool.cpp and conv_pool.cpp: the pooling's geometry check and the row kernels of
// 2 x 2 max pooling at stride 2, which the fused convolution and pooling also runs.
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

// One output row of 2 x 2 max pooling from input rows r0 and r1 (columns 0 .. 2 OW - 1): y[j] the
// window's first maximum (a NaN wins), a[j] its index base + 2j + (0, 1, IW or IW + 1).
void max_pool2_row(const float* r0, const float* r1, int64_t OW, int32_t base, int32_t IW, float* y, int32_t* a);
// Its gradient: r0 and r1 (columns 0 .. 2 OW - 1) get dy[j] at each window's maximum, 0 elsewhere.
void max_unpool2_row(const float* dy, const int32_t* a, int64_t OW, int32_t base, int32_t IW, float* r0, float* r1);

}  // namespace attn::ops::pool_detail

// Private to the ops layer: the gate nonlinearities of the recurrent cells' fused passes.
//
// tanh is the 13/6-degree rational interpolant of Eigen (Eigen/src/Core/MathFunctionsImpl.h,
// generic_fast_tanh_float, MPL 2.0): no exp, no branches but a clamp, within 7 ulps (4e-7
// absolute) of the exact value on all floats, and about 4x faster than libm's tanhf, which
// otherwise dominates an LSTM step at hidden sizes of a few hundred. sigmoid uses the
// polynomial exp_approx of ops/softmax.hpp (2 ulp), which vectorises where expf does not.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attn/core/tensor.hpp"
#include "attn/ops/softmax.hpp"

namespace attn::ops::detail {

// Below this many [B, H] elements a cell's elementwise pass is not worth waking the threads for.
inline constexpr int64_t kCellParallelMin = int64_t{1} << 14;

inline float sigmoid(float v) { return 1.0f / (1.0f + exp_approx(-v)); }

inline float tanh_fast(float v) {
  // Outside [-c, c] tanh rounds to +-1 in float; c is where the interpolant reaches 1.
  const float c = 7.90531110763549805f;
  const float x = std::clamp(v, -c, c);
  const float x2 = x * x;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  // Near 0 the quotient loses relative accuracy; tanh(x) = x to float precision there.
  return std::fabs(v) < 4e-4f ? v : x * p / q;
}

// out[j] += sum_r d[r, j] over `rows` rows of width `cols` (bias gradients of the cells).
inline void add_column_sums(int64_t rows, int64_t cols, const float* d, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) out[j] += d[r * cols + j];
}

// The data of an optional tensor (undefined means zeros), or nullptr.
inline const float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

}  // namespace attn::ops::detail

// Private to the ops layer: the gate nonlinearities of the recurrent cells' fused passes.
//
// tanh is ops::tanh_fast (ops/activation.hpp: Eigen's rational interpolant, within 7 ulps and,
// since it vectorises, several times faster than libm's tanhf, which otherwise dominates an LSTM
// step at hidden sizes of a few hundred). sigmoid uses the polynomial exp_approx of ops/softmax.hpp (2 ulp), which
// vectorises where expf does not.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attn/core/tensor.hpp"
#include "attn/ops/activation.hpp"
#include "attn/ops/softmax.hpp"

namespace attn::ops::detail {

// Below this many [B, H] elements a cell's elementwise pass is not worth waking the threads for.
// At 2^14 the captioner's decoder cell (B = 32, H = 128: 2^12) ran its passes on one thread
// between two-thread GEMMs: its recurrence timed alone reached 0.67-0.74 of the sgemm rate of
// its products at 2 threads, 0.77-0.79 with the passes split (perf_caption --parts, 3 runs each).
inline constexpr int64_t kCellParallelMin = int64_t{1} << 12;

inline float sigmoid(float v) { return 1.0f / (1.0f + exp_approx(-v)); }

using ops::tanh_fast;

// out[j] += sum_r d[r, j] over `rows` rows of width `cols` (bias gradients of the cells).
inline void add_column_sums(int64_t rows, int64_t cols, const float* d, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) out[j] += d[r * cols + j];
}

// The data of an optional tensor (undefined means zeros), or nullptr.
inline const float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

}  // namespace attn::ops::detail

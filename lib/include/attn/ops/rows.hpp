// Raw-row helpers for the step loops of recurrent models, which keep several quantities side by
// side in one strided buffer (e.g. the Luong decoder's [s_t; c_t] rows) and move them between
// buffers one block of rows at a time.
#pragma once
#include <cstdint>
#include <cstring>

namespace attn::ops {

// y[i] += x[i] for i < n.
inline void add_into(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

// Copies `rows` rows of `width` floats from x (row stride ldx) to y (row stride ldy).
inline void copy_rows(const float* x, int64_t ldx, float* y, int64_t ldy, int64_t rows, int64_t width) {
  if (width == 0) return;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(y + r * ldy, x + r * ldx, static_cast<size_t>(width) * sizeof(float));
}

}  // namespace attn::ops

// Softmax and log-softmax over the last dimension, with an optional keep-mask, and the row
// kernels that fused ops (attention, cross-entropy) reuse.
//
// Every row is normalised stably: the row maximum is subtracted before exponentiating, so
// logits of any magnitude give finite results, and e^x is computed once per element. A mask
// is a float32 or int32 tensor broadcastable to the input (numpy rules, aligned on the right:
// each mask dimension is 1 or equal to the input's); its zero entries are masked out: their
// probability is exactly 0 (log-probability -inf) and they are left out of the normaliser.
// A row with nothing left (fully masked, or every logit -inf) yields all-zero probabilities
// (log-probabilities all -inf) and a zero gradient, never NaN: a padded query that may attend
// to nothing then contributes nothing, instead of poisoning the batch.
//
// The mask is applied in the forward pass only: backward reads the cached output, whose zeros
// (or -infs) already mark the masked entries.
#pragma once
#include <bit>
#include <cstdint>

#include "attn/core/tensor.hpp"

namespace attn::ops {

struct SoftmaxCache {
  Tensor y;   // [..., L] the output probabilities (shares storage with the returned tensor)
};
struct LogSoftmaxCache {
  Tensor y;   // [..., L] the output log-probabilities (shares storage with the returned tensor)
};

// y_i = exp(x_i - m) / sum_{j kept} exp(x_j - m), m = max_{j kept} x_j; y_i = 0 where masked.
// x: [..., L]   mask: broadcastable to [..., L], float32 or int32, 0 = masked   ->   y: [..., L]
// Returns a new tensor. Reference: Bridle (1990); Goodfellow et al., Deep Learning, sec. 6.2.2.3.
Tensor softmax_forward(const Tensor& x, SoftmaxCache* cache);
Tensor softmax_forward(const Tensor& x, const Tensor& mask, SoftmaxCache* cache);
// dx_i = y_i (dy_i - sum_j dy_j y_j).   dy: [..., L]   ->   dx: [..., L], a new tensor.
Tensor softmax_backward(const Tensor& dy, const SoftmaxCache& cache);

// y_i = x_i - m - log sum_{j kept} exp(x_j - m); y_i = -inf where masked (log 0).
// Shapes and mask as softmax_forward. Returns a new tensor.
Tensor log_softmax_forward(const Tensor& x, LogSoftmaxCache* cache);
Tensor log_softmax_forward(const Tensor& x, const Tensor& mask, LogSoftmaxCache* cache);
// dx_i = dy_i - exp(y_i) sum_{j kept} dy_j; dx_i = 0 where y_i = -inf (masked).
// dy: [..., L]   ->   dx: [..., L], a new tensor.
Tensor log_softmax_backward(const Tensor& dy, const LogSoftmaxCache& cache);

// ---- Row kernels on raw contiguous memory: `rows` rows of length L, row r at x + r * L. ----
// A logit of -inf counts as masked (a row of -inf gives zeros), so a fused op can mask by
// writing -inf. They parallelise over rows when the work pays for it and they are not already
// inside a parallel region; called from one, they run serially on the calling thread.

// x <- softmax(x) row by row, overwriting.
void softmax_rows_inplace(float* x, int64_t rows, int64_t L);
// x <- log_softmax(x) row by row, overwriting.
void log_softmax_rows_inplace(float* x, int64_t rows, int64_t L);
// dx = y * (dy - rowsum(dy * y)), overwriting dx; dx may alias dy.
void softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t L);
// dx = dy - exp(y) * rowsum(dy), and 0 where y = -inf, overwriting dx; dx may alias dy.
void log_softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t rows,
                               int64_t L);

// e^x for float, branch-free so that loops calling it vectorise: within 2 ulp of expf on
// [-87.3, 88]; 0 below (where expf is subnormal), e^88 above; NaN stays NaN. Range reduction
// x = n ln2 + r, |r| <= ln2/2, and Cephes' degree-6 polynomial for e^r (S. Moshier, Cephes
// Math Library, expf.c); 2^n is built in the exponent bits. GCC vectorises the selects only
// under -fno-trapping-math (clang's default), which libattn is compiled with.
inline float exp_approx(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;   // ln 2 = Hi + Lo, Hi exact
  constexpr float kRound = 12582912.0f;   // 1.5 * 2^23: adding it rounds to an integer
  constexpr float kLo = -87.33654f, kHi = 88.0f;   // e^kLo = 2^-126, the smallest normal float
  float xc = x < kLo ? kLo : x;
  xc = xc > kHi ? kHi : xc;
  const float t = xc * kLog2e + kRound;   // n sits in the low mantissa bits of t
  const float n = t - kRound;             // round(x / ln 2)
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t k = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kRound);   // n, in [-126, 127]
  const float two_n = std::bit_cast<float>((k + 127) << 23);
  return x < kLo ? 0.0f : p * two_n;
}

}  // namespace attn::ops

// Batch normalisation over channels (batch_norm.hpp): one pass per channel for the statistics in
// double, one to normalise; channels spread over the threads, each summed in a fixed order (8
// partial sums per plane, so that the sums vectorise), so the result does not depend on the
// thread count.
#include "attn/ops/batch_norm.hpp"

#include <cmath>
#include <string>

#include "attn/core/error.hpp"
#include "attn/core/threading.hpp"

namespace attn::ops {
namespace {

struct Dims {
  int64_t B, C, P;   // P = H W
};
Dims dims_of(const Tensor& x) { return {x.dim(0), x.dim(1), x.dim(2) * x.dim(3)}; }

// Σ_i f(i) over 0 <= i < P in 8 partial sums (lane i mod 8), added up in a fixed order: one
// double accumulator would be a chain of dependent additions, 8 lanes vectorise.
template <class F>
double lane_sum(int64_t P, F f) {
  double lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= P; i += 8)
    for (int k = 0; k < 8; ++k) lane[k] += f(i + k);
  for (int k = 0; i < P; ++i, ++k) lane[k] += f(i);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

}  // namespace

Tensor batch_norm2d_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                            const Tensor& running_var, bool training, float eps, BatchNormCache* cache,
                            BatchStatistics* stats) {
  check_tensor(x, {kAny, kAny, kAny, kAny}, "batch_norm2d: x [B, C, H, W]");
  const Dims d = dims_of(x);   // not a structured binding: clang 14 cannot share one with OpenMP
  const int64_t B = d.B, C = d.C, P = d.P;
  for (const auto* t : {&gamma, &beta, &running_mean, &running_var})
    check_tensor(*t, {C}, "batch_norm2d: gamma, beta and the running statistics [C]");
  if (!(eps > 0)) throw ConfigError("batch_norm2d: eps must be > 0, got " + std::to_string(eps));
  const int64_t n = B * P;
  if (training && n < 2)
    throw ShapeError("batch_norm2d: training needs more than one value per channel, got B H W = " +
                     std::to_string(n));
  Tensor y = Tensor::uninitialized(x.shape());
  Tensor x_hat = cache ? Tensor::uninitialized(x.shape()) : Tensor();
  Tensor rstd = Tensor::uninitialized({C});
  Tensor mean_out({C}), var_out({C});
  const float* X = x.data();
#pragma omp parallel for schedule(static) if (x.numel() >= kParallelMinElements)
  for (int64_t c = 0; c < C; ++c) {
    double mean = running_mean.data()[c], var = running_var.data()[c];
    if (training) {
      double s = 0, s2 = 0;
      for (int64_t b = 0; b < B; ++b) {
        const float* p = X + (b * C + c) * P;
        s += lane_sum(P, [p](int64_t i) { return static_cast<double>(p[i]); });
      }
      mean = s / static_cast<double>(n);
      for (int64_t b = 0; b < B; ++b) {
        const float* p = X + (b * C + c) * P;
        s2 += lane_sum(P, [p, mean](int64_t i) { return (p[i] - mean) * (p[i] - mean); });
      }
      var = s2 / static_cast<double>(n);
      mean_out.data()[c] = static_cast<float>(mean);
      var_out.data()[c] = static_cast<float>(var);
    }
    const float r = static_cast<float>(1.0 / std::sqrt(var + eps)), m = static_cast<float>(mean);
    const float g = gamma.data()[c], bt = beta.data()[c];
    rstd.data()[c] = r;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t off = (b * C + c) * P;
      const float* in = X + off;
      float* out = y.data() + off;
      if (cache) {
        float* h = x_hat.data() + off;
        for (int64_t i = 0; i < P; ++i) h[i] = (in[i] - m) * r, out[i] = g * h[i] + bt;
      } else {
        for (int64_t i = 0; i < P; ++i) out[i] = g * ((in[i] - m) * r) + bt;
      }
    }
  }
  if (cache) *cache = {x_hat, rstd};
  if (stats && training) *stats = {mean_out, var_out, n};
  return y;
}

Tensor batch_norm2d_backward(const Tensor& dy, const Tensor& gamma, const BatchNormCache& cache, Tensor& dgamma,
                             Tensor& dbeta) {
  check_tensor(dy, cache.x_hat.shape(), "batch_norm2d_backward: dy");
  const Dims d = dims_of(dy);
  const int64_t B = d.B, C = d.C, P = d.P;
  const double n = static_cast<double>(B * P);
  Tensor dx = Tensor::uninitialized(dy.shape());
  const float* dY = dy.data();
  const float* H = cache.x_hat.data();
#pragma omp parallel for schedule(static) if (dy.numel() >= kParallelMinElements)
  for (int64_t c = 0; c < C; ++c) {
    double sum_dy = 0, sum_dy_h = 0;
    for (int64_t b = 0; b < B; ++b) {
      const float *g = dY + (b * C + c) * P, *h = H + (b * C + c) * P;
      sum_dy += lane_sum(P, [g](int64_t i) { return static_cast<double>(g[i]); });
      sum_dy_h += lane_sum(P, [g, h](int64_t i) { return static_cast<double>(g[i]) * h[i]; });
    }
    dgamma.data()[c] += static_cast<float>(sum_dy_h);
    dbeta.data()[c] += static_cast<float>(sum_dy);
    const float g = gamma.data()[c], r = cache.rstd.data()[c];
    const float mean_g = static_cast<float>(g * sum_dy / n), mean_gh = static_cast<float>(g * sum_dy_h / n);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t off = (b * C + c) * P;
      const float *gy = dY + off, *h = H + off;
      float* out = dx.data() + off;
      for (int64_t i = 0; i < P; ++i) out[i] = r * (g * gy[i] - mean_g - h[i] * mean_gh);
    }
  }
  return dx;
}

void update_running_stats(const BatchStatistics& stats, float momentum, Tensor& running_mean, Tensor& running_var) {
  const int64_t C = running_mean.numel();
  const float unbias = static_cast<float>(static_cast<double>(stats.n) / static_cast<double>(stats.n - 1));
  for (int64_t c = 0; c < C; ++c) {
    running_mean.data()[c] = (1 - momentum) * running_mean.data()[c] + momentum * stats.mean.data()[c];
    running_var.data()[c] = (1 - momentum) * running_var.data()[c] + momentum * stats.var.data()[c] * unbias;
  }
}

}  // namespace attn::ops

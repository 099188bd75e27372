// Batch normalisation over channels (batch_norm.hpp): one pass per channel for the statistics in
// double, one to normalise; channels spread over the threads, each summed in a fixed order, so
// the result does not depend on the thread count.
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
      for (int64_t b = 0; b < B; ++b)
        for (const float* p = X + (b * C + c) * P; p < X + (b * C + c + 1) * P; ++p) s += *p;
      mean = s / static_cast<double>(n);
      for (int64_t b = 0; b < B; ++b)
        for (const float* p = X + (b * C + c) * P; p < X + (b * C + c + 1) * P; ++p) s2 += (*p - mean) * (*p - mean);
      var = s2 / static_cast<double>(n);
      mean_out.data()[c] = static_cast<float>(mean);
      var_out.data()[c] = static_cast<float>(var);
    }
    const float r = static_cast<float>(1.0 / std::sqrt(var + eps)), m = static_cast<float>(mean);
    const float g = gamma.data()[c], bt = beta.data()[c];
    rstd.data()[c] = r;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t off = (b * C + c) * P;
      for (int64_t i = 0; i < P; ++i) {
        const float h = (X[off + i] - m) * r;
        if (cache) x_hat.data()[off + i] = h;
        y.data()[off + i] = g * h + bt;
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
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = (b * C + c) * P; i < (b * C + c + 1) * P; ++i) {
        sum_dy += dY[i];
        sum_dy_h += static_cast<double>(dY[i]) * H[i];
      }
    dgamma.data()[c] += static_cast<float>(sum_dy_h);
    dbeta.data()[c] += static_cast<float>(sum_dy);
    const float g = gamma.data()[c], r = cache.rstd.data()[c];
    const float mean_g = static_cast<float>(g * sum_dy / n), mean_gh = static_cast<float>(g * sum_dy_h / n);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = (b * C + c) * P; i < (b * C + c + 1) * P; ++i) dx.data()[i] = r * (g * dY[i] - mean_g - H[i] * mean_gh);
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

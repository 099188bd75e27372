// Batch normalisation over the channels of [B, C, H, W] (Ioffe & Szegedy 2015, "Batch
// Normalization", Alg. 1 and 2), as torch.nn.BatchNorm2d: in training, each channel is
// normalised by the mean and biased variance of its B H W values, and the running statistics
// move towards them (running = (1 - momentum) running + momentum batch, the variance's
// unbiased: times n / (n - 1)); in evaluation the running statistics normalise.
//
// The forward returns the batch statistics instead of updating the running ones itself, so that
// a forward pass is a pure function and a caller decides whether the step counts
// (update_running_stats); the cache keeps x_hat and 1/sqrt(var + eps) per channel.
#pragma once
#include "attn/core/tensor.hpp"

namespace attn::ops {

struct BatchNormCache {
  Tensor x_hat;   // [B, C, H, W] (x - mean) rstd
  Tensor rstd;    // [C] 1 / sqrt(var + eps)
};

// The statistics a training forward used: mean [C], biased variance [C], and n = B H W.
struct BatchStatistics {
  Tensor mean, var;
  int64_t n = 0;
};

// y = gamma (x - mean) / sqrt(var + eps) + beta per channel.   x: [B, C, H, W]   gamma, beta,
// running_mean, running_var: [C]. training: the batch's mean and variance (returned in *stats
// when not null); else the running ones. eps > 0 (ConfigError). Returns a new tensor.
Tensor batch_norm2d_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                            const Tensor& running_var, bool training, float eps, BatchNormCache* cache,
                            BatchStatistics* stats = nullptr);

// Training-mode backward (the batch statistics depend on x): with g = dy gamma, per channel,
//   dx = rstd (g - mean(g) - x_hat mean(g x_hat)).
// Adds sum dy x_hat into dgamma and sum dy into dbeta. Returns dx, a new tensor.
Tensor batch_norm2d_backward(const Tensor& dy, const Tensor& gamma, const BatchNormCache& cache, Tensor& dgamma,
                             Tensor& dbeta);

// running = (1 - momentum) running + momentum stat, the variance unbiased (n / (n - 1)).
void update_running_stats(const BatchStatistics& stats, float momentum, Tensor& running_mean, Tensor& running_var);

}  // namespace attn::ops

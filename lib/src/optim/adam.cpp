// Adam and AdamW: bias corrections from the step number, then one fused, vectorised pass per
// parameter.
#include "attn/optim/adam.hpp"

#include <cmath>

#include "detail.hpp"

namespace attn::optim {

Adam::Adam(const AdamConfig& config, bool decoupled)
    : Optimizer(decoupled ? "adamw" : "adam", config.lr, {"m", "v"}), config_(config), decoupled_(decoupled) {
  detail::require(config.beta1 >= 0.0f && config.beta1 < 1.0f, kind(), "beta1", "in [0, 1)", config.beta1);
  detail::require(config.beta2 >= 0.0f && config.beta2 < 1.0f, kind(), "beta2", "in [0, 1)", config.beta2);
  detail::require(config.eps > 0.0f && std::isfinite(config.eps), kind(), "eps", "finite and > 0", config.eps);
  detail::require(config.weight_decay >= 0.0f && std::isfinite(config.weight_decay), kind(), "weight_decay",
                  "finite and >= 0", config.weight_decay);
}

void Adam::update(Param& p, std::span<Tensor> slots, int64_t t) {
  const float b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps;
  // Algorithm 1 with the corrections folded into two scalars (computed in double):
  //   w -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),   bc_k = 1 - beta_k^t.
  const double bc1 = 1.0 - std::pow(static_cast<double>(b1), static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(static_cast<double>(b2), static_cast<double>(t));
  const float step_size = static_cast<float>(lr() / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  // Adam: L2 term in the gradient. AdamW: decoupled shrink w *= 1 - lr * wd (exactly 1 when wd = 0).
  const float l2 = decoupled_ ? 0.0f : config_.weight_decay;
  const float shrink = decoupled_ ? static_cast<float>(1.0 - static_cast<double>(lr()) * config_.weight_decay) : 1.0f;

  const int64_t n = p.value.numel();
  float* __restrict w = p.value.data();
  const float* __restrict g = p.grad.data();
  float* __restrict m = slots[0].data();
  float* __restrict v = slots[1].data();
#pragma omp parallel for simd schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] + l2 * w[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    w[i] = shrink * w[i] - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
  }
}

}  // namespace attn::optim

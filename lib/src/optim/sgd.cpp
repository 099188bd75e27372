// SGD with heavy-ball or Nesterov momentum: one fused, vectorised pass per parameter.
#include "attn/optim/sgd.hpp"

#include <cmath>

#include "detail.hpp"

namespace attn::optim {
namespace {

std::vector<std::string> sgd_slots(const SgdConfig& c) {
  return c.momentum > 0.0f ? std::vector<std::string>{"momentum"} : std::vector<std::string>{};
}

// w: [n] updated in place; g: [n] read; b: [n] velocity, updated (unused when mu == 0).
void sgd_update(int64_t n, float* __restrict w, const float* __restrict g, float* __restrict b,
                float lr, float mu, bool nesterov, float wd) {
  if (mu == 0.0f) {
#pragma omp parallel for simd schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * (g[i] + wd * w[i]);
  } else if (!nesterov) {
#pragma omp parallel for simd schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      b[i] = mu * b[i] + (g[i] + wd * w[i]);
      w[i] -= lr * b[i];
    }
  } else {
#pragma omp parallel for simd schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      const float gi = g[i] + wd * w[i];
      b[i] = mu * b[i] + gi;
      w[i] -= lr * (gi + mu * b[i]);
    }
  }
}

}  // namespace

Sgd::Sgd(const SgdConfig& config) : Optimizer("sgd", config.lr, sgd_slots(config)), config_(config) {
  detail::require(config.momentum >= 0.0f && config.momentum < 1.0f, "sgd", "momentum", "in [0, 1)",
                  config.momentum);
  detail::require(config.weight_decay >= 0.0f && std::isfinite(config.weight_decay), "sgd", "weight_decay",
                  "finite and >= 0", config.weight_decay);
  if (config.nesterov && config.momentum == 0.0f)
    throw ConfigError("sgd: nesterov needs momentum > 0, got momentum 0");
}

void Sgd::update(Param& p, std::span<Tensor> slots, int64_t /*t*/) {
  sgd_update(p.value.numel(), p.value.data(), p.grad.data(), slots.empty() ? nullptr : slots[0].data(), lr(),
             config_.momentum, config_.nesterov, config_.weight_decay);
}

}  // namespace attn::optim

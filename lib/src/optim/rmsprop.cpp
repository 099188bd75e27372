// RMSProp, plain or centred (Graves 2013, eq. 38-41), with or without momentum: one fused,
// vectorised pass per parameter.
#include "attn/optim/rmsprop.hpp"

#include <cmath>

#include "detail.hpp"

namespace attn::optim {
namespace {

std::vector<std::string> rmsprop_slots(const RmsPropConfig& c) {
  std::vector<std::string> slots{"sq"};
  if (c.centered) slots.push_back("mean");
  if (c.momentum > 0.0f) slots.push_back("momentum");
  return slots;
}

struct RmsPropArgs {
  float lr, rho, eps, mu, wd;
};

// w: [n] updated in place; g: [n] read; n2: [n] mean square; c: [n] mean (centred only);
// d: [n] step buffer (momentum only). The two flags select one of four loops at compile time.
template <bool kCentered, bool kMomentum>
void rmsprop_update(int64_t n, float* __restrict w, const float* __restrict g, float* __restrict n2,
                    float* __restrict c, float* __restrict d, RmsPropArgs a) {
  const float one_minus_rho = 1.0f - a.rho;
#pragma omp parallel for simd schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] + a.wd * w[i];
    n2[i] = a.rho * n2[i] + one_minus_rho * gi * gi;                        // (38)
    float var = n2[i];
    if constexpr (kCentered) {
      c[i] = a.rho * c[i] + one_minus_rho * gi;                             // (39)
      var -= c[i] * c[i];
      var = var > 0.0f ? var : 0.0f;   // rounding can take it just below 0
    }
    const float step = a.lr * gi / std::sqrt(var + a.eps);
    if constexpr (kMomentum) {
      d[i] = a.mu * d[i] + step;                                            // (40), d = -Delta
      w[i] -= d[i];                                                         // (41)
    } else {
      w[i] -= step;
    }
  }
}

}  // namespace

RmsProp::RmsProp(const RmsPropConfig& config)
    : Optimizer("rmsprop", config.lr, rmsprop_slots(config)), config_(config) {
  detail::require(config.rho >= 0.0f && config.rho < 1.0f, "rmsprop", "rho", "in [0, 1)", config.rho);
  detail::require(config.eps > 0.0f && std::isfinite(config.eps), "rmsprop", "eps", "finite and > 0", config.eps);
  detail::require(config.momentum >= 0.0f && config.momentum < 1.0f, "rmsprop", "momentum", "in [0, 1)",
                  config.momentum);
  detail::require(config.weight_decay >= 0.0f && std::isfinite(config.weight_decay), "rmsprop", "weight_decay",
                  "finite and >= 0", config.weight_decay);
}

void RmsProp::update(Param& p, std::span<Tensor> slots, int64_t /*t*/) {
  const int64_t n = p.value.numel();
  float* w = p.value.data();
  const float* g = p.grad.data();
  float* sq = slots[0].data();
  const RmsPropArgs a{lr(), config_.rho, config_.eps, config_.momentum, config_.weight_decay};
  const bool centered = config_.centered, momentum = config_.momentum > 0.0f;
  float* mean = centered ? slots[1].data() : nullptr;
  float* d = momentum ? slots.back().data() : nullptr;
  if (centered && momentum) rmsprop_update<true, true>(n, w, g, sq, mean, d, a);
  else if (centered) rmsprop_update<true, false>(n, w, g, sq, mean, d, a);
  else if (momentum) rmsprop_update<false, true>(n, w, g, sq, mean, d, a);
  else rmsprop_update<false, false>(n, w, g, sq, mean, d, a);
}

}  // namespace attn::optim

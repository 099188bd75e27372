// Adam (Kingma & Ba 2015, Algorithm 1) and AdamW (Loshchilov & Hutter 2019, Algorithm 2).
//
// At step t (1-based), with g the gradient:
//   m <- beta1 * m + (1 - beta1) * g                       "adam/m/<param>"
//   v <- beta2 * v + (1 - beta2) * g^2                     "adam/v/<param>"
//   w <- w - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
// The bias corrections come from t, which is why step() takes it. eps is added to the
// corrected sqrt(v), exactly as in Algorithm 1 (and torch.optim.Adam).
//
// Weight decay differs between the two:
//   Adam:  L2 regularisation, g = grad + weight_decay * w, before the moments.
//   AdamW: decoupled, w <- w * (1 - lr * weight_decay) before the Adam step, so the decay is
//          not rescaled by sqrt(v). As in torch.optim.AdamW, it is scaled by lr (the paper's
//          schedule multiplier eta_t), so a schedule decays both together.
// State names use the kind: "adam/..." or "adamw/...", so a checkpoint of one does not load
// silently into the other.
#pragma once
#include "attn/optim/optimizer.hpp"

namespace attn::optim {

struct AdamConfig {
  float lr = 1e-3f;            // >= 0
  float beta1 = 0.9f;          // in [0, 1)
  float beta2 = 0.999f;        // in [0, 1)
  float eps = 1e-8f;           // > 0
  float weight_decay = 0.0f;   // >= 0: L2 for Adam, decoupled for AdamW
};

class Adam : public Optimizer {
 public:
  // Both constructors throw ConfigError naming the bad field.
  explicit Adam(const AdamConfig& config) : Adam(config, /*decoupled=*/false) {}
  const AdamConfig& config() const { return config_; }

 protected:
  Adam(const AdamConfig& config, bool decoupled);
  void update(Param& p, std::span<Tensor> slots, int64_t t) override;

 private:
  AdamConfig config_;
  bool decoupled_;
};

class AdamW final : public Adam {
 public:
  explicit AdamW(const AdamConfig& config) : Adam(config, /*decoupled=*/true) {}
};

}  // namespace attn::optim

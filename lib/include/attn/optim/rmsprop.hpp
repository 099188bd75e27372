// RMSProp (Tieleman & Hinton 2012, lecture 6e), plain or centred, with momentum, in the form of
// Graves 2013, "Generating sequences with recurrent neural networks", eq. 38-41:
//
//   n <- rho * n + (1 - rho) * g^2                       (38)  mean square, "rmsprop/sq"
//   c <- rho * c + (1 - rho) * g                         (39)  mean, centred only, "rmsprop/mean"
//   d <- mu * d - lr * g / sqrt(n - c^2 + eps)           (40)  step, momentum > 0 only,
//   w <- w + d                                           (41)       "rmsprop/momentum"
//
// Without centring c is 0; without momentum (mu = 0) the step d is not stored. g is the
// gradient plus weight_decay * w. As in Graves (and TensorFlow's RMSProp), eps sits inside the
// square root and the momentum buffer accumulates steps (lr included). Graves' own setting is
// RmsPropConfig::graves2013(). In float arithmetic n - c^2 can dip below 0 by rounding, so it is
// clamped at 0 before eps is added.
#pragma once
#include "attn/optim/optimizer.hpp"

namespace attn::optim {

struct RmsPropConfig {
  float lr = 1e-3f;            // >= 0
  float rho = 0.95f;           // decay of the running averages, in [0, 1)
  float eps = 1e-6f;           // > 0, added inside the square root
  float momentum = 0.0f;       // mu in [0, 1)
  bool centered = false;       // divide by the running standard deviation instead of the RMS
  float weight_decay = 0.0f;   // L2 coefficient added to the gradient, >= 0

  // Graves 2013 section 4: centred, rho 0.95, momentum 0.9, lr 1e-4, eps 1e-4.
  static RmsPropConfig graves2013() { return {1e-4f, 0.95f, 1e-4f, 0.9f, true, 0.0f}; }
};

class RmsProp final : public Optimizer {
 public:
  explicit RmsProp(const RmsPropConfig& config);   // throws ConfigError naming the bad field
  const RmsPropConfig& config() const { return config_; }

 protected:
  void update(Param& p, std::span<Tensor> slots, int64_t t) override;

 private:
  RmsPropConfig config_;
};

}  // namespace attn::optim

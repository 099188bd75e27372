// Stochastic gradient descent with momentum (heavy-ball or Nesterov) and L2 weight decay.
//
// With g = grad + weight_decay * w and a velocity buffer b (zero before the first step):
//   momentum == 0:            w <- w - lr * g
//   heavy ball (Polyak 1964):  b <- mu * b + g;   w <- w - lr * b
//   Nesterov:                  b <- mu * b + g;   w <- w - lr * (g + mu * b)
// This is the formulation of Sutskever et al. 2013 ("On the importance of initialization and
// momentum in deep learning", eq. 1-4) with the learning rate moved outside the buffer, as in
// PyTorch's torch.optim.SGD (dampening 0): b holds gradients, not steps, so changing lr takes
// effect at once. State: "sgd/momentum/<param>" when momentum > 0, none otherwise.
#pragma once
#include "attn/optim/optimizer.hpp"

namespace attn::optim {

struct SgdConfig {
  float lr = 0.01f;            // >= 0
  float momentum = 0.0f;       // mu in [0, 1)
  bool nesterov = false;       // requires momentum > 0
  float weight_decay = 0.0f;   // L2 coefficient added to the gradient, >= 0
};

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const SgdConfig& config);   // throws ConfigError naming the bad field
  const SgdConfig& config() const { return config_; }

 protected:
  void update(Param& p, std::span<Tensor> slots, int64_t t) override;

 private:
  SgdConfig config_;
};

}  // namespace attn::optim

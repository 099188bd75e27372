// Learning-rate schedules: small value types, each a pure function lr(t) of the 1-based step
// number t, so a resumed run gets the same rate from the step it stored. Use them as
//
//   const optim::WarmupInverseSqrt schedule(/*d_model=*/512, /*warmup=*/4000);
//   opt.set_lr(schedule(t));  opt.step(params, t);
//
// Schedule (a variant) holds any of them for code that picks one from a configuration.
// Constructors throw ConfigError naming the bad field; calling with t < 1 throws ConfigError.
#pragma once
#include <cstdint>
#include <variant>

namespace attn::optim {

// lr(t) = lr.
struct ConstantLr {
  explicit ConstantLr(float lr);                       // lr >= 0
  float operator()(int64_t t) const;
  float lr;
};

// Vaswani et al. 2017, "Attention is all you need", eq. 3:
//   lr(t) = scale * d_model^-0.5 * min(t^-0.5, t * warmup^-1.5)
// Rises linearly for `warmup` steps, peaks at t = warmup with scale * (d_model * warmup)^-0.5,
// then decays as 1/sqrt(t). The paper uses d_model 512, warmup 4000, scale 1.
struct WarmupInverseSqrt {
  WarmupInverseSqrt(int64_t d_model, int64_t warmup, double scale = 1.0);   // all > 0
  // The same curve scaled so that its peak (at t = warmup) is `peak` (> 0):
  // scale = peak * sqrt(d_model * warmup).
  static WarmupInverseSqrt with_peak(int64_t d_model, int64_t warmup, double peak);
  float operator()(int64_t t) const;
  int64_t d_model;
  int64_t warmup;
  double scale;
};

// lr(t) = lr0 * gamma^floor((t - 1) / step_size): steps 1..step_size run at lr0, the next
// step_size at lr0 * gamma, and so on. With step_size = n batches per epoch times k, the rate
// drops after every k epochs (PyTorch's StepLR stepped once per epoch; Sukhbaatar et al. 2015
// halve it every 25 epochs).
struct StepDecay {
  StepDecay(float lr0, float gamma, int64_t step_size);   // lr0 >= 0, gamma in (0, 1], step_size >= 1
  float operator()(int64_t t) const;
  float lr0;
  float gamma;
  int64_t step_size;
};

using Schedule = std::variant<ConstantLr, WarmupInverseSqrt, StepDecay>;
// The rate of whichever schedule `s` holds at step t.
float lr_at(const Schedule& s, int64_t t);

}  // namespace attn::optim

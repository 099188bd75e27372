// Learning-rate schedules: constant, linear warm-up + inverse square root, step decay.
#include "attn/optim/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "detail.hpp"

namespace attn::optim {
namespace {

void require_step(int64_t t, const char* who) {
  if (t < 1) throw ConfigError(std::string(who) + ": step number t must be >= 1, got " + std::to_string(t));
}

}  // namespace

ConstantLr::ConstantLr(float lr) : lr(lr) {
  detail::require(std::isfinite(lr) && lr >= 0.0f, "constant schedule", "lr", "finite and >= 0", lr);
}

float ConstantLr::operator()(int64_t t) const {
  require_step(t, "constant schedule");
  return lr;
}

WarmupInverseSqrt::WarmupInverseSqrt(int64_t d_model, int64_t warmup, double scale)
    : d_model(d_model), warmup(warmup), scale(scale) {
  const char* who = "warm-up schedule";
  detail::require(d_model > 0, who, "d_model", "> 0", static_cast<double>(d_model));
  detail::require(warmup > 0, who, "warmup", "> 0", static_cast<double>(warmup));
  detail::require(std::isfinite(scale) && scale > 0.0, who, "scale", "finite and > 0", scale);
}

WarmupInverseSqrt WarmupInverseSqrt::with_peak(int64_t d_model, int64_t warmup, double peak) {
  detail::require(std::isfinite(peak) && peak > 0.0, "warm-up schedule", "peak", "finite and > 0", peak);
  return WarmupInverseSqrt(d_model, warmup, peak * std::sqrt(static_cast<double>(d_model) * static_cast<double>(warmup)));
}

float WarmupInverseSqrt::operator()(int64_t t) const {
  require_step(t, "warm-up schedule");
  const double td = static_cast<double>(t), w = static_cast<double>(warmup);
  // Vaswani et al. 2017, eq. 3. The two branches meet at t = warmup.
  const double rate = std::min(1.0 / std::sqrt(td), td / (w * std::sqrt(w)));
  return static_cast<float>(scale * rate / std::sqrt(static_cast<double>(d_model)));
}

StepDecay::StepDecay(float lr0, float gamma, int64_t step_size)
    : lr0(lr0), gamma(gamma), step_size(step_size) {
  const char* who = "step-decay schedule";
  detail::require(std::isfinite(lr0) && lr0 >= 0.0f, who, "lr0", "finite and >= 0", lr0);
  detail::require(gamma > 0.0f && gamma <= 1.0f, who, "gamma", "in (0, 1]", gamma);
  detail::require(step_size >= 1, who, "step_size", ">= 1", static_cast<double>(step_size));
}

float StepDecay::operator()(int64_t t) const {
  require_step(t, "step-decay schedule");
  const double k = static_cast<double>((t - 1) / step_size);   // floor: both are >= 0
  return static_cast<float>(lr0 * std::pow(static_cast<double>(gamma), k));
}

float lr_at(const Schedule& s, int64_t t) {
  return std::visit([t](const auto& schedule) { return schedule(t); }, s);
}

}  // namespace attn::optim

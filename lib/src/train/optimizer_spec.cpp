#include "attn/train/optimizer_spec.hpp"

#include <algorithm>

#include "attn/core/enum_names.hpp"
#include "attn/core/error.hpp"
#include "attn/io/config_fields.hpp"

namespace attn::train {
namespace {

constexpr EnumNames<LrSchedule, 3> kSchedules{{
    {LrSchedule::constant, "constant"},
    {LrSchedule::inverse_sqrt, "inverse-sqrt"},
    {LrSchedule::step, "step"},
}};

std::string number(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

const char* lr_schedule_name(LrSchedule s) { return enum_name(kSchedules, s); }
LrSchedule parse_lr_schedule(const std::string& name) { return parse_enum(kSchedules, "learning-rate schedule", name); }

optim::OptimizerConfig resolve_optimizer(const OptimizerSpec& spec, int64_t batches_per_epoch, int64_t model_width) {
  optim::OptimizerConfig c;
  c.kind = spec.kind;
  c.sgd = spec.sgd;
  c.rmsprop = spec.rmsprop;
  c.adam = spec.adam;
  const std::string schedule = lr_schedule_name(spec.schedule);
  switch (spec.schedule) {
    case LrSchedule::inverse_sqrt:
      if (spec.lr > 0)
        c.schedule = optim::WarmupInverseSqrt::with_peak(std::max<int64_t>(model_width, 1), spec.warmup, spec.lr);
      else if (model_width > 0)
        c.schedule = optim::WarmupInverseSqrt(model_width, spec.warmup);
      else
        throw ConfigError("lr_schedule inverse-sqrt needs lr > 0 (its peak) for a model without a width");
      break;
    case LrSchedule::step:
    case LrSchedule::constant:
      if (!(spec.lr > 0)) throw ConfigError("lr must be > 0 with lr_schedule " + schedule + ", got " + number(spec.lr));
      if (spec.schedule == LrSchedule::constant) {
        c.schedule = optim::ConstantLr(static_cast<float>(spec.lr));
      } else {
        if (spec.lr_decay_every < 1)
          throw ConfigError("lr_decay_every must be >= 1 epoch, got " + std::to_string(spec.lr_decay_every));
        c.schedule = optim::StepDecay(static_cast<float>(spec.lr), static_cast<float>(spec.lr_decay),
                                      spec.lr_decay_every * std::max<int64_t>(batches_per_epoch, 1));
      }
      break;
  }
  optim::make_optimizer(c);   // the constants' range checks, before anything is trained
  return c;
}

std::map<std::string, io::AttrValue> optimizer_attrs(const OptimizerSpec& spec) {
  io::FieldWriter w;   // floats as their shortest decimals
  w.attrs["optimizer"] = std::string(optim::optimizer_kind_name(spec.kind));
  w.attrs["lr"] = spec.lr;
  w.attrs["lr_schedule"] = std::string(lr_schedule_name(spec.schedule));
  if (spec.schedule == LrSchedule::inverse_sqrt) w.attrs["warmup"] = spec.warmup;
  if (spec.schedule == LrSchedule::step) {
    w.attrs["lr_decay"] = spec.lr_decay;
    w.attrs["lr_decay_every"] = spec.lr_decay_every;
  }
  switch (spec.kind) {
    case optim::OptimizerKind::sgd:
      w("momentum", spec.sgd.momentum);
      w("nesterov", spec.sgd.nesterov);
      w("weight_decay", spec.sgd.weight_decay);
      break;
    case optim::OptimizerKind::rmsprop:
      w("rho", spec.rmsprop.rho);
      w("eps", spec.rmsprop.eps);
      w("momentum", spec.rmsprop.momentum);
      w("centered", spec.rmsprop.centered);
      w("weight_decay", spec.rmsprop.weight_decay);
      break;
    case optim::OptimizerKind::adam:
    case optim::OptimizerKind::adamw:
      w("beta1", spec.adam.beta1);
      w("beta2", spec.adam.beta2);
      w("eps", spec.adam.eps);
      w("weight_decay", spec.adam.weight_decay);
      break;
  }
  return std::move(w.attrs);
}

}  // namespace attn::train

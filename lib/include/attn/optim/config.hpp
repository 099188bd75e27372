// One description of any optimizer and learning-rate schedule, for code that picks them from a
// configuration (the trainer, the tools' --optimizer options): which kind, each kind's constants,
// and the schedule. make_optimizer builds it. A run states its optimizer as a
// train::OptimizerSpec (train/optimizer_spec.hpp: the schedule's period in epochs, what /config
// stores), which resolves to this.
//
//   OptimizerConfig c = OptimizerConfig::adam({.lr = 0, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f});
//   std::unique_ptr<Optimizer> opt = make_optimizer(c);   // throws ConfigError naming a bad field
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "attn/optim/adam.hpp"
#include "attn/optim/optimizer.hpp"
#include "attn/optim/rmsprop.hpp"
#include "attn/optim/schedule.hpp"
#include "attn/optim/sgd.hpp"

namespace attn::optim {

enum class OptimizerKind : uint8_t { sgd, rmsprop, adam, adamw };
// "sgd", "rmsprop", "adam", "adamw"; parsing anything else throws ConfigError listing them.
const char* optimizer_kind_name(OptimizerKind kind);
OptimizerKind parse_optimizer_kind(const std::string& name);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  SgdConfig sgd;            // used when kind is sgd
  RmsPropConfig rmsprop;    // rmsprop
  AdamConfig adam;          // adam and adamw
  // The rate at every step t; each optimizer's own `lr` field is ignored.
  Schedule schedule = ConstantLr(1e-3f);
};

// A fresh optimizer of config.kind with that kind's constants (validated: ConfigError).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config);

}  // namespace attn::optim

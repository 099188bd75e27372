// An optimizer and its learning-rate schedule as a run states them (the train verbs' options, a
// model file's /config): the optimizer's kind and constants, the schedule by name, its decay
// period in epochs. resolve_optimizer turns it into what the trainer runs
// (TrainConfig::optimizer, periods in steps), and optimizer_attrs is what /config stores of it,
// so that a program linking attnlab writes the files the tools write:
//
//   const train::OptimizerSpec spec{.kind = optim::OptimizerKind::sgd, .schedule = train::LrSchedule::step,
//                                   .lr = 0.32, .lr_decay = 0.5, .lr_decay_every = 25};
//   config.optimizer = train::resolve_optimizer(spec, train::batches_per_epoch(task, config), 0);
//   task.config.merge(train::optimizer_attrs(spec));
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "attn/io/hdf5_file.hpp"
#include "attn/optim/config.hpp"

namespace attn::train {

enum class LrSchedule : uint8_t {
  constant,       // lr at every step
  inverse_sqrt,   // Vaswani et al.'s warm-up, then 1/sqrt(t) (optim::WarmupInverseSqrt)
  step,           // lr, multiplied by lr_decay after every lr_decay_every epochs (optim::StepDecay)
};
// "constant", "inverse-sqrt", "step"; parsing anything else throws ConfigError listing them.
const char* lr_schedule_name(LrSchedule s);
LrSchedule parse_lr_schedule(const std::string& name);

struct OptimizerSpec {
  optim::OptimizerKind kind = optim::OptimizerKind::adam;
  LrSchedule schedule = LrSchedule::constant;
  double lr = 1e-3;         // the rate (> 0); inverse-sqrt: its peak, 0 = (d_model * warmup)^-0.5
  optim::SgdConfig sgd{};   // each kind's constants (their own lr is not used)
  optim::RmsPropConfig rmsprop = optim::RmsPropConfig::graves2013();
  optim::AdamConfig adam{};
  int64_t warmup = 4000;         // inverse-sqrt: steps to the peak
  double lr_decay = 0.5;         // step: the factor...
  int64_t lr_decay_every = 25;   // ...applied after every this many epochs
};

// The optimizer the trainer runs: an epoch is batches_per_epoch steps; model_width is d_model,
// which inverse-sqrt with lr 0 scales by. ConfigError naming the field when the spec cannot run
// (lr <= 0 but for inverse-sqrt's default peak, a constant out of its kind's range).
optim::OptimizerConfig resolve_optimizer(const OptimizerSpec& spec, int64_t batches_per_epoch, int64_t model_width);

// What /config stores of spec: optimizer, lr, lr_schedule; warmup (inverse-sqrt) or lr_decay and
// lr_decay_every (step); and the constants of its kind (sgd: momentum, nesterov, weight_decay;
// rmsprop: rho, eps, momentum, centered, weight_decay; adam, adamw: beta1, beta2, eps,
// weight_decay), floats as the decimals they were written as.
std::map<std::string, io::AttrValue> optimizer_attrs(const OptimizerSpec& spec);

}  // namespace attn::train

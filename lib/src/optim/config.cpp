// OptimizerConfig: names of the kinds and the factory (config.hpp).
#include "attn/optim/config.hpp"

#include "attn/core/error.hpp"

namespace attn::optim {

const char* optimizer_kind_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::rmsprop: return "rmsprop";
    case OptimizerKind::adam: return "adam";
    case OptimizerKind::adamw: return "adamw";
  }
  return "?";
}

OptimizerKind parse_optimizer_kind(const std::string& name) {
  for (OptimizerKind k : {OptimizerKind::sgd, OptimizerKind::rmsprop, OptimizerKind::adam, OptimizerKind::adamw})
    if (name == optimizer_kind_name(k)) return k;
  throw ConfigError("unknown optimizer '" + name + "' (expected sgd, rmsprop, adam or adamw)");
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c) {
  switch (c.kind) {
    case OptimizerKind::sgd: return std::make_unique<Sgd>(c.sgd);
    case OptimizerKind::rmsprop: return std::make_unique<RmsProp>(c.rmsprop);
    case OptimizerKind::adam: return std::make_unique<Adam>(c.adam);
    case OptimizerKind::adamw: return std::make_unique<AdamW>(c.adam);
  }
  throw ConfigError("make_optimizer: unknown optimizer kind");
}

}  // namespace attn::optim

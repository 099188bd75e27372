// OptimizerConfig: names of the kinds and the factory (config.hpp).
#include "attn/optim/config.hpp"

#include "attn/core/enum_names.hpp"
#include "attn/core/error.hpp"

namespace attn::optim {

namespace {
constexpr EnumNames<OptimizerKind, 4> kOptimizerNames{{{OptimizerKind::sgd, "sgd"},
                                                       {OptimizerKind::rmsprop, "rmsprop"},
                                                       {OptimizerKind::adam, "adam"},
                                                       {OptimizerKind::adamw, "adamw"}}};
}  // namespace

const char* optimizer_kind_name(OptimizerKind kind) { return enum_name(kOptimizerNames, kind); }
OptimizerKind parse_optimizer_kind(const std::string& name) { return parse_enum(kOptimizerNames, "optimizer", name); }


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

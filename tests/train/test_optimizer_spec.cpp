// An optimizer as a run states it (train/optimizer_spec.hpp): the schedule resolved with its
// period in steps, what /config stores of it, and the specs that cannot run.
#include "attn/train/optimizer_spec.hpp"

#include <cmath>
#include <variant>

#include "attn/core/error.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

TEST_CASE("optimizer spec: a step schedule's period in epochs becomes steps, and inverse-sqrt peaks at lr",
          "[unit][trainer]") {
  train::OptimizerSpec spec{.kind = optim::OptimizerKind::sgd, .schedule = train::LrSchedule::step, .lr = 0.32};
  spec.lr_decay_every = 25;
  const optim::OptimizerConfig c = train::resolve_optimizer(spec, /*batches_per_epoch=*/32, /*model_width=*/0);
  CHECK(c.kind == optim::OptimizerKind::sgd);
  REQUIRE(std::holds_alternative<optim::StepDecay>(c.schedule));
  CHECK(std::get<optim::StepDecay>(c.schedule).step_size == 25 * 32);
  CHECK(optim::lr_at(c.schedule, 800) == 0.32f);
  CHECK(optim::lr_at(c.schedule, 801) == 0.16f);

  spec = {.schedule = train::LrSchedule::inverse_sqrt, .lr = 1e-3, .warmup = 100};
  const optim::OptimizerConfig peak = train::resolve_optimizer(spec, 7, 256);
  CHECK(optim::lr_at(peak.schedule, 100) == Approx(1e-3));
  CHECK(optim::lr_at(peak.schedule, 50) == Approx(0.5e-3));
  spec.lr = 0;   // Vaswani et al.'s own scale: (d_model * warmup)^-0.5 at the peak
  CHECK(optim::lr_at(train::resolve_optimizer(spec, 7, 256).schedule, 100) == Approx(1.0 / std::sqrt(256.0 * 100)));

  spec = {.lr = 0.05};
  CHECK(optim::lr_at(train::resolve_optimizer(spec, 7, 0).schedule, 1000) == 0.05f);
}

TEST_CASE("optimizer spec: /config holds the kind, the schedule's own fields and the kind's constants as written",
          "[unit][trainer]") {
  train::OptimizerSpec spec{.kind = optim::OptimizerKind::adamw, .schedule = train::LrSchedule::inverse_sqrt};
  spec.adam.beta2 = 0.98f;
  auto attrs = train::optimizer_attrs(spec);
  CHECK(std::get<std::string>(attrs.at("optimizer")) == "adamw");
  CHECK(std::get<std::string>(attrs.at("lr_schedule")) == "inverse-sqrt");
  CHECK(std::get<int64_t>(attrs.at("warmup")) == 4000);
  CHECK(std::get<double>(attrs.at("beta2")) == 0.98);   // the decimal written, not 0.9800000190734863
  CHECK(attrs.count("lr_decay") == 0);
  CHECK(attrs.count("momentum") == 0);

  spec = {.kind = optim::OptimizerKind::rmsprop, .schedule = train::LrSchedule::step, .lr = 1e-4};
  attrs = train::optimizer_attrs(spec);
  CHECK(std::get<double>(attrs.at("lr")) == 1e-4);
  CHECK(std::get<double>(attrs.at("lr_decay")) == 0.5);
  CHECK(std::get<int64_t>(attrs.at("lr_decay_every")) == 25);
  CHECK(std::get<int64_t>(attrs.at("centered")) == 1);   // Graves' form, the spec's default
  CHECK(std::get<double>(attrs.at("eps")) == 1e-4);
  CHECK(attrs.count("warmup") == 0);
  CHECK(attrs.count("beta1") == 0);
}

TEST_CASE("optimizer spec: a rate that cannot run is a ConfigError naming the field", "[unit][trainer]") {
  CHECK_THROWS_WITH(train::resolve_optimizer({.lr = 0}, 1, 0), Contains("lr must be > 0") && Contains("constant"));
  CHECK_THROWS_WITH(train::resolve_optimizer({.schedule = train::LrSchedule::step, .lr = -1}, 1, 0),
                    Contains("lr must be > 0") && Contains("step"));
  CHECK_THROWS_WITH(train::resolve_optimizer({.schedule = train::LrSchedule::inverse_sqrt, .lr = 0}, 1, 0),
                    Contains("inverse-sqrt needs lr > 0"));
  train::OptimizerSpec spec;
  spec.adam.beta1 = 1.5f;
  CHECK_THROWS_AS(train::resolve_optimizer(spec, 1, 0), ConfigError);
  CHECK_THROWS_WITH(train::parse_lr_schedule("cosine"), Contains("cosine") && Contains("inverse-sqrt"));
  CHECK(train::parse_lr_schedule("step") == train::LrSchedule::step);
}

// Learning-rate schedules: values at chosen steps, the warm-up peak, and bad settings.
#include "attn/optim/schedule.hpp"

#include <cmath>

#include "test_support.hpp"

using namespace attn;

TEST_CASE("schedule: warm-up + inverse square root (Vaswani et al. 2017 eq. 3)", "[unit][schedule]") {
  const optim::WarmupInverseSqrt s(/*d_model=*/512, /*warmup=*/4000);
  // lr(t) = 512^-0.5 * min(t^-0.5, t * 4000^-1.5)
  CHECK(s(1) == Approx(1.0 / std::sqrt(512.0) / std::pow(4000.0, 1.5)).epsilon(1e-6));   // 1.7469e-7
  CHECK(s(2000) == Approx(2000.0 / std::sqrt(512.0) / std::pow(4000.0, 1.5)).epsilon(1e-6));
  // Peak at t = warmup: (512 * 4000)^-0.5 = 6.98771e-4, above both neighbours.
  CHECK(s(4000) == Approx(1.0 / std::sqrt(512.0 * 4000.0)).epsilon(1e-6));
  CHECK(s(4000) > s(3999));
  CHECK(s(4000) > s(4001));
  // After it, 1/sqrt(t): four times the steps, half the rate.
  CHECK(s(16000) == Approx(s(4000) / 2).epsilon(1e-6));
  const optim::WarmupInverseSqrt doubled(512, 4000, /*scale=*/2.0);
  CHECK(doubled(4000) == Approx(2 * s(4000)).epsilon(1e-6));
  // with_peak: the same curve through a chosen peak.
  const auto peaked = optim::WarmupInverseSqrt::with_peak(512, 4000, /*peak=*/1e-3);
  CHECK(peaked(4000) == Approx(1e-3).epsilon(1e-6));
  CHECK(peaked(16000) == Approx(0.5e-3).epsilon(1e-6));
}

TEST_CASE("schedule: step decay and constant", "[unit][schedule]") {
  const optim::StepDecay s(/*lr0=*/0.1f, /*gamma=*/0.5f, /*step_size=*/10);
  // lr0 * 0.5^floor((t - 1) / 10): steps 1..10 at 0.1, 11..20 at 0.05, ...
  CHECK(s(1) == 0.1f);
  CHECK(s(10) == 0.1f);
  CHECK(s(11) == Approx(0.05));
  CHECK(s(20) == Approx(0.05));
  CHECK(s(25) == Approx(0.025));
  CHECK(optim::ConstantLr(0.3f)(12345) == 0.3f);
  const optim::Schedule any = s;
  CHECK(optim::lr_at(any, 25) == s(25));
  CHECK(optim::lr_at(optim::Schedule{optim::ConstantLr(0.3f)}, 1) == 0.3f);
}

TEST_CASE("schedule: bad settings and steps before 1 are configuration errors", "[unit][schedule]") {
  REQUIRE_THROWS_AS(optim::WarmupInverseSqrt(512, 0), ConfigError);
  REQUIRE_THROWS_WITH(optim::WarmupInverseSqrt(512, 0),
                      Catch::Equals("warm-up schedule: warmup must be > 0, got 0"));
  REQUIRE_THROWS_WITH(optim::WarmupInverseSqrt(0, 10), Catch::Contains("d_model must be > 0, got 0"));
  REQUIRE_THROWS_WITH(optim::StepDecay(0.1f, 1.5f, 10),
                      Catch::Equals("step-decay schedule: gamma must be in (0, 1], got 1.5"));
  REQUIRE_THROWS_WITH(optim::StepDecay(0.1f, 0.5f, 0), Catch::Contains("step_size must be >= 1, got 0"));
  REQUIRE_THROWS_WITH(optim::ConstantLr(-1.0f), Catch::Contains("lr must be finite and >= 0, got -1"));
  REQUIRE_THROWS_WITH(optim::StepDecay(0.1f, 0.5f, 10)(0),
                      Catch::Equals("step-decay schedule: step number t must be >= 1, got 0"));
}

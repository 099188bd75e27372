// Gradient clipping: the global norm over several parameters, its effect, thread-count
// independence, non-finite gradients, clipping by value, and bad limits.
#include "attn/optim/clip.hpp"

#include <cmath>
#include <cstring>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("clip: global norm over all parameters, scaled down only when above the limit", "[unit][clip]") {
  Param a("a", Tensor({1})), b("b", Tensor({2}));
  a.grad = Tensor::from({1}, {3.0f});
  b.grad = Tensor::from({2}, {0.0f, 4.0f});
  const ParamList params{&a, &b};
  CHECK(optim::grad_norm(params) == 5.0);   // sqrt(3^2 + 0^2 + 4^2)

  // Under the limit: returned, grads untouched.
  CHECK(optim::clip_grad_norm(params, 10.0) == 5.0);
  CHECK(a.grad.at(0) == 3.0f);
  CHECK(b.grad.at(1) == 4.0f);

  // Over it: every grad scaled by 1 / 5, so the new norm is the limit; the old norm is returned.
  CHECK(optim::clip_grad_norm(params, 1.0) == 5.0);
  CHECK_THAT(a.grad, test::close_to(Tensor::from({1}, {0.6f}), 1e-6));
  CHECK_THAT(b.grad, test::close_to(Tensor::from({2}, {0.0f, 0.8f}), 1e-6));
  CHECK(optim::grad_norm(params) == Approx(1.0).epsilon(1e-6));
}

TEST_CASE("clip: the norm is the same to the bit on 1 and 2 threads, and accurate", "[unit][clip]") {
  Rng rng(9);
  Param p("p", Tensor({300001}));
  p.grad = randn({300001}, rng);
  double exact = 0;
  for (int64_t i = 0; i < p.grad.numel(); ++i) exact += double(p.grad.at(i)) * p.grad.at(i);
  const int before = num_threads();
  set_num_threads(1);
  const double one = optim::grad_norm({&p});
  set_num_threads(2);
  const double two = optim::grad_norm({&p});
  set_num_threads(before);
  CHECK(std::memcmp(&one, &two, sizeof one) == 0);
  CHECK(one == Approx(std::sqrt(exact)).epsilon(1e-12));
}

TEST_CASE("clip: a non-finite norm is returned and the grads are left alone", "[unit][clip]") {
  Param p("p", Tensor({2}));
  p.grad = Tensor::from({2}, {std::nanf(""), 100.0f});
  CHECK(std::isnan(optim::clip_grad_norm({&p}, 1.0)));
  CHECK(p.grad.at(1) == 100.0f);
}

TEST_CASE("clip: by value clamps each element to [-limit, limit]", "[unit][clip]") {
  Param p("p", Tensor({5}));
  p.grad = Tensor::from({5}, {-3.0f, 0.5f, 2.0f, -1.0f, std::nanf("")});
  optim::clip_grad_value({&p}, 1.0f);
  CHECK(p.grad.at(0) == -1.0f);
  CHECK(p.grad.at(1) == 0.5f);
  CHECK(p.grad.at(2) == 1.0f);
  CHECK(p.grad.at(3) == -1.0f);
  CHECK(std::isnan(p.grad.at(4)));   // NaN is not hidden by clipping
}

TEST_CASE("clip: a limit that is not positive is a configuration error", "[unit][clip]") {
  Param p("p", Tensor({2}));
  REQUIRE_THROWS_AS(optim::clip_grad_norm({&p}, 0.0), ConfigError);
  REQUIRE_THROWS_WITH(optim::clip_grad_norm({&p}, -1.0),
                      Catch::Equals("clip_grad_norm: max_norm must be finite and > 0, got -1"));
  REQUIRE_THROWS_WITH(optim::clip_grad_value({&p}, 0.0f),
                      Catch::Equals("clip_grad_value: limit must be finite and > 0, got 0"));
}

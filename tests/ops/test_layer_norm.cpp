#include "attn/ops/layer_norm.hpp"

#include <cmath>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("layer_norm: a hand-checked example", "[unit][layer_norm]") {
  // Row [1, 2, 3]: mean 2, variance 2/3, so x_hat = [-1, 0, 1] * sqrt(3/2).
  const Tensor x = Tensor::from({2, 3}, {1, 2, 3, 10, 10, 10});
  const Tensor gamma = Tensor::from({3}, {2, 1, 1}), beta = Tensor::from({3}, {0, 0, 1});
  ops::LayerNormCache cache;
  const Tensor y = ops::layer_norm_forward(x, gamma, beta, /*eps=*/1e-5f, &cache);
  const float s = std::sqrt(1.5f);
  // A constant row normalises to 0, leaving beta.
  CHECK_THAT(y, test::close_to(Tensor::from({2, 3}, {-2 * s, 0, 1 + s, 0, 0, 1}), 1e-5));
  CHECK_THAT(cache.mean, test::close_to(Tensor::from({2}, {2, 10}), 1e-6));
  CHECK(cache.rstd.at(0) == Approx(1 / std::sqrt(2.0 / 3 + 1e-5)).epsilon(1e-6));
  CHECK(cache.x.shares_storage_with(x));
}

TEST_CASE("layer_norm_backward matches finite differences for x, gamma and beta", "[gradcheck][layer_norm]") {
  Rng rng(31);
  Tensor x = randn({2, 3, 5}, rng), gamma = randn({5}, rng), beta = randn({5}, rng);
  const Tensor r = randn({2, 3, 5}, rng);   // loss = sum(r * y)
  auto loss = [&] { return test::dot(r, ops::layer_norm_forward(x, gamma, beta, 1e-5f, nullptr)); };
  ops::LayerNormCache cache;
  ops::layer_norm_forward(x, gamma, beta, 1e-5f, &cache);
  Tensor dgamma = Tensor::full({5}, 1.0f), dbeta = Tensor::full({5}, -2.0f);   // backward adds
  const Tensor dx = ops::layer_norm_backward(r, gamma, cache, dgamma, dbeta);
  Tensor ng = test::numeric_grad(loss, gamma), nb = test::numeric_grad(loss, beta);
  for (int64_t j = 0; j < 5; ++j) {
    ng.at(j) += 1.0f;
    nb.at(j) -= 2.0f;
  }
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
  CHECK_THAT(dgamma, test::close_to(ng, 1e-2));
  CHECK_THAT(dbeta, test::close_to(nb, 1e-2));
}

TEST_CASE("layer_norm: gradients do not depend on the thread count", "[unit][layer_norm]") {
  Rng rng(32);
  const Tensor x = randn({300, 128}, rng), dy = randn({300, 128}, rng);   // parallel path
  const Tensor gamma = randn({128}, rng), beta = randn({128}, rng);
  Tensor dx[2], dg[2] = {Tensor({128}), Tensor({128})}, db[2] = {Tensor({128}), Tensor({128})};
  for (int t = 0; t < 2; ++t) {
    set_num_threads(t + 1);
    ops::LayerNormCache cache;
    ops::layer_norm_forward(x, gamma, beta, 1e-5f, &cache);
    dx[t] = ops::layer_norm_backward(dy, gamma, cache, dg[t], db[t]);
  }
  CHECK_THAT(dx[1], test::close_to(dx[0], 0.0));
  CHECK_THAT(dg[1], test::close_to(dg[0], 0.0));
  CHECK_THAT(db[1], test::close_to(db[0], 0.0));
  double col0 = 0;   // dbeta is the column sum of dy
  for (int64_t r = 0; r < 300; ++r) col0 += dy.at(r * 128);
  CHECK(db[0].at(0) == Approx(col0).epsilon(1e-5));
}

TEST_CASE("layer_norm: bad shapes and eps are reported", "[unit][layer_norm]") {
  const Tensor x({4, 5}), g({5}), b({5});
  REQUIRE_THROWS_WITH(ops::layer_norm_forward(x, Tensor({4}), b, 1e-5f, nullptr),
                      Catch::Contains("layer_norm: gamma [D] has shape [4], expected [5]"));
  REQUIRE_THROWS_WITH(ops::layer_norm_forward(x, g, Tensor({5, 1}), 1e-5f, nullptr),
                      Catch::Contains("layer_norm: beta [D] has shape [5, 1], expected [5]"));
  REQUIRE_THROWS_AS(ops::layer_norm_forward(x, g, b, -1.0f, nullptr), ConfigError);
  REQUIRE_THROWS_WITH(ops::layer_norm_forward(x, g, b, -1.0f, nullptr),
                      Catch::Contains("layer_norm: eps must be finite and >= 0, got -1"));
  ops::LayerNormCache cache;
  ops::layer_norm_forward(x, g, b, 1e-5f, &cache);
  Tensor dg({5}), db({5});
  REQUIRE_THROWS_WITH(ops::layer_norm_backward(Tensor({5, 4}), g, cache, dg, db),
                      Catch::Contains("layer_norm_backward: dy [..., D] has shape [5, 4], expected [4, 5]"));
  Tensor bad({6});
  REQUIRE_THROWS_WITH(ops::layer_norm_backward(Tensor({4, 5}), g, cache, bad, db),
                      Catch::Contains("layer_norm_backward: dgamma [D] has shape [6], expected [5]"));
}

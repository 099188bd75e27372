#include "attn/ops/batch_norm.hpp"

#include <cmath>

#include "test_support.hpp"

using namespace attn;

TEST_CASE("batch_norm2d: a hand-checked example, evaluation mode, running statistics", "[unit][batch_norm]") {
  // Channel 0 holds 1, 2, 3, 6 (over B = 2, H W = 2): mean 3, biased variance 3.5; channel 1 is constant.
  const Tensor x = Tensor::from({2, 2, 1, 2}, {1, 2, 5, 5,  3, 6, 5, 5});
  const Tensor gamma = Tensor::from({2}, {2, 1}), beta = Tensor::from({2}, {0, 1});
  Tensor rm = Tensor::from({2}, {0, 0}), rv = Tensor::from({2}, {1, 1});
  ops::BatchNormCache cache;
  ops::BatchStatistics stats;
  const Tensor y = ops::batch_norm2d_forward(x, gamma, beta, rm, rv, /*training=*/true, 1e-5f, &cache, &stats);
  const float r = 1 / std::sqrt(3.5f + 1e-5f);
  CHECK_THAT(y, test::close_to(Tensor::from({2, 2, 1, 2}, {-4 * r, -2 * r, 1, 1,  0, 6 * r, 1, 1}), 1e-5));
  CHECK(stats.n == 4);
  CHECK(stats.mean.at(0) == Approx(3.0));
  CHECK(stats.var.at(0) == Approx(3.5));
  // PyTorch's momentum rule, the variance unbiased: 3.5 * 4 / 3.
  ops::update_running_stats(stats, 0.1f, rm, rv);
  CHECK(rm.at(0) == Approx(0.3));
  CHECK(rv.at(0) == Approx(0.9 + 0.1 * 3.5 * 4 / 3));
  CHECK(rv.at(1) == Approx(0.9));
  // Evaluation normalises by the running statistics and leaves them alone.
  const Tensor e = ops::batch_norm2d_forward(x, gamma, beta, rm, rv, /*training=*/false, 1e-5f, nullptr);
  CHECK(e.at(0) == Approx(2 * (1 - 0.3) / std::sqrt(rv.at(0) + 1e-5)));
  REQUIRE_THROWS_WITH(ops::batch_norm2d_forward(Tensor({1, 2, 1, 1}), gamma, beta, rm, rv, true, 1e-5f, nullptr),
                      Catch::Contains("more than one value per channel"));
}

TEST_CASE("batch_norm2d_backward matches finite differences for x, gamma and beta", "[gradcheck][batch_norm]") {
  Rng rng(41);
  Tensor x = randn({3, 2, 2, 3}, rng), gamma = randn({2}, rng), beta = randn({2}, rng);
  const Tensor rm({2}), rv = Tensor::full({2}, 1.0f);
  const Tensor r = randn({3, 2, 2, 3}, rng);   // loss = sum(r * y)
  auto loss = [&] { return test::dot(r, ops::batch_norm2d_forward(x, gamma, beta, rm, rv, true, 1e-5f, nullptr)); };
  ops::BatchNormCache cache;
  ops::batch_norm2d_forward(x, gamma, beta, rm, rv, true, 1e-5f, &cache);
  Tensor dgamma = Tensor::full({2}, 1.0f), dbeta({2});   // backward adds
  const Tensor dx = ops::batch_norm2d_backward(r, gamma, cache, dgamma, dbeta);
  Tensor ng = test::numeric_grad(loss, gamma);
  for (int64_t j = 0; j < 2; ++j) ng.at(j) += 1.0f;
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
  CHECK_THAT(dgamma, test::close_to(ng, 1e-2));
  CHECK_THAT(dbeta, test::close_to(test::numeric_grad(loss, beta), 1e-2));
}

// Max and average pooling, 1-D and 2-D: cases by hand (including the padding convention),
// gradient routing, finite-difference gradients, bad options.
#include "attn/ops/pool.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "attn/core/flops.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// Distinct values 0.1 apart in a random order: no two elements of a window are within a
// finite-difference step of each other, so max pooling has no kink near the test point.
Tensor distinct_values(const Shape& shape, Rng& rng) {
  Tensor t(shape);
  std::vector<int64_t> order(static_cast<size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.uniform_int(i)]);
  for (int64_t i = 0; i < t.numel(); ++i) t.at(i) = 0.1f * static_cast<float>(order[i]) - 1.0f;
  return t;
}

}  // namespace

TEST_CASE("max pooling by hand, and its gradient goes to the argmax", "[unit][pool]") {
  const Tensor x = Tensor::from({1, 1, 4, 4}, {1, 5, 2, 0,    //
                                              3, 4, 8, 6,    //
                                              0, 2, 1, 1,    //
                                              9, 1, 3, 7});
  ops::MaxPoolCache cache;
  const Tensor y = ops::max_pool2d_forward(x, {.kernel = 2}, &cache);
  CHECK_THAT(y, test::close_to(Tensor::from({1, 1, 2, 2}, {5, 8, 9, 7}), 0));
  const Tensor dx = ops::max_pool2d_backward(Tensor::from({1, 1, 2, 2}, {1, 2, 3, 4}), cache);
  CHECK_THAT(dx, test::close_to(Tensor::from({1, 1, 4, 4}, {0, 1, 0, 0,    //
                                                           0, 0, 2, 0,    //
                                                           0, 0, 0, 0,    //
                                                           3, 0, 0, 4}), 0));

  // Overlapping windows (kernel 2, stride 1) share a maximum: its gradients add up.
  const Tensor x1 = Tensor::from({1, 1, 4}, {1, 9, 2, 3});
  ops::MaxPoolCache c1;
  CHECK_THAT(ops::max_pool1d_forward(x1, {.kernel = 2, .stride = 1}, &c1),
             test::close_to(Tensor::from({1, 1, 3}, {9, 9, 3}), 0));
  CHECK_THAT(ops::max_pool1d_backward(Tensor::from({1, 1, 3}, {1, 1, 1}), c1),
             test::close_to(Tensor::from({1, 1, 4}, {0, 2, 0, 1}), 0));
  // Padding is -inf, never the maximum, even for negative inputs.
  CHECK_THAT(ops::max_pool1d_forward(Tensor::from({1, 1, 2}, {-3, -4}), {.kernel = 2, .padding = 1},
                                     nullptr),
             test::close_to(Tensor::from({1, 1, 2}, {-3, -4}), 0));
}

TEST_CASE("2 x 2 max pooling (its own loop) keeps the rules: first maximum, NaN wins, odd sizes cut",
          "[unit][pool]") {
  // Rows of 3 outputs (shorter than a vector) and of 18 (vectors and a tail), NaNs in any slot.
  for (const auto& [H, W] : {std::pair<int64_t, int64_t>{5, 7}, std::pair<int64_t, int64_t>{6, 37}}) {
    INFO(H << " x " << W);
    Rng rng(4);
    Tensor x = rand_uniform({2, 3, H, W}, rng, -1.0f, 1.0f);
    for (int64_t i = 0; i < x.numel(); i += 5) x.at(i) = 0.5f;   // ties
    for (int64_t i = 17; i < x.numel(); i += 41) x.at(i) = std::nanf("");
    ops::MaxPoolCache cache;
    const Tensor y = ops::max_pool2d_forward(x, {.kernel = 2}, &cache);
    const int64_t OH = H / 2, OW = W / 2;
    REQUIRE(y.shape() == Shape{2, 3, OH, OW});
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          int64_t arg = 2 * i * W + 2 * j;   // the first of the window, then any larger one or a NaN
          for (int64_t r = 2 * i; r < 2 * i + 2; ++r)
            for (int64_t c = 2 * j; c < 2 * j + 2; ++c) {
              const float v = x.at(p * H * W + r * W + c), best = x.at(p * H * W + arg);
              if (v > best || std::isnan(v)) arg = r * W + c;
            }
          const int64_t k = (p * OH + i) * OW + j;
          CHECK(cache.argmax.idata()[k] == arg);
          const float want = x.at(p * H * W + arg);
          CHECK((y.at(k) == want || (std::isnan(want) && std::isnan(y.at(k)))));
        }
    // Backward: dy at each window's maximum, 0 everywhere else (the odd last row and column too).
    const Tensor dy = rand_uniform(y.shape(), rng, -1.0f, 1.0f);
    Tensor want({2, 3, H, W});
    for (int64_t k = 0; k < y.numel(); ++k) want.at(k / (OH * OW) * H * W + cache.argmax.idata()[k]) += dy.at(k);
    CHECK_THAT(ops::max_pool2d_backward(dy, cache), test::close_to(want, 0));
  }
}

TEST_CASE("average pooling by hand counts the padding (count_include_pad)", "[unit][pool]") {
  // Kernel 2, stride 1, padding 1 on [[1, 2], [3, 4]]: every window divides by 4.
  const Tensor x = Tensor::from({1, 1, 2, 2}, {1, 2, 3, 4});
  flops::reset();
  CHECK_THAT(ops::avg_pool2d_forward(x, {.kernel = 2, .stride = 1, .padding = 1}, nullptr),
             test::close_to(Tensor::from({1, 1, 3, 3}, {0.25f, 0.75f, 0.5f,    //
                                                       1.0f, 2.5f, 1.5f,      //
                                                       0.75f, 1.75f, 1.0f}), 1e-6));
  CHECK(flops::count() == 9 * 4);
  const Tensor x1 = Tensor::from({1, 1, 5}, {1, 3, 2, 5, 4});
  CHECK_THAT(ops::avg_pool1d_forward(x1, {.kernel = 3, .stride = 1, .padding = 1}, nullptr),
             test::close_to(Tensor::from({1, 1, 5}, {4.0f / 3, 2, 10.0f / 3, 11.0f / 3, 3}), 1e-6));
  // The default stride is the kernel: windows [1, 3], [2, 5]; the trailing 4 is dropped.
  CHECK_THAT(ops::avg_pool1d_forward(x1, {.kernel = 2}, nullptr),
             test::close_to(Tensor::from({1, 1, 2}, {2, 3.5f}), 1e-6));
}

TEST_CASE("max_pool2d and avg_pool2d backward match finite differences", "[gradcheck][pool]") {
  Rng rng(41);
  Tensor x = distinct_values({2, 3, 5, 6}, rng);
  for (const ops::PoolOptions& o : {ops::PoolOptions{.kernel = 2},
                                    ops::PoolOptions{.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}}}) {
    ops::MaxPoolCache mc;
    const Tensor ym = ops::max_pool2d_forward(x, o, &mc);
    const Tensor rm = randn(ym.shape(), rng);
    auto max_loss = [&] { return test::dot(rm, ops::max_pool2d_forward(x, o, nullptr)); };
    CHECK_THAT(ops::max_pool2d_backward(rm, mc), test::close_to(test::numeric_grad(max_loss, x)));

    ops::AvgPoolCache ac;
    const Tensor ya = ops::avg_pool2d_forward(x, o, &ac);
    const Tensor ra = randn(ya.shape(), rng);
    auto avg_loss = [&] { return test::dot(ra, ops::avg_pool2d_forward(x, o, nullptr)); };
    CHECK_THAT(ops::avg_pool2d_backward(ra, ac), test::close_to(test::numeric_grad(avg_loss, x)));
  }
}

TEST_CASE("max_pool1d and avg_pool1d backward match finite differences", "[gradcheck][pool]") {
  Rng rng(42);
  Tensor x = distinct_values({2, 3, 9}, rng);
  const ops::PoolOptions o{.kernel = 3, .stride = 2, .padding = 1};
  ops::MaxPoolCache mc;
  const Tensor ym = ops::max_pool1d_forward(x, o, &mc);
  REQUIRE(ym.shape() == Shape{2, 3, 5});
  const Tensor rm = randn(ym.shape(), rng);
  auto max_loss = [&] { return test::dot(rm, ops::max_pool1d_forward(x, o, nullptr)); };
  CHECK_THAT(ops::max_pool1d_backward(rm, mc), test::close_to(test::numeric_grad(max_loss, x)));

  ops::AvgPoolCache ac;
  const Tensor ya = ops::avg_pool1d_forward(x, o, &ac);
  const Tensor ra = randn(ya.shape(), rng);
  auto avg_loss = [&] { return test::dot(ra, ops::avg_pool1d_forward(x, o, nullptr)); };
  CHECK_THAT(ops::avg_pool1d_backward(ra, ac), test::close_to(test::numeric_grad(avg_loss, x)));
}

TEST_CASE("pooling: bad shapes and options are named in the message", "[unit][pool]") {
  const Tensor x({2, 3, 6, 6});
  REQUIRE_THROWS_AS(ops::max_pool2d_forward(x, {}, nullptr), ConfigError);
  REQUIRE_THROWS_WITH(ops::max_pool2d_forward(x, {}, nullptr),
                      Catch::Contains("max_pool2d: kernel must be >= 1, got (0, 0)"));
  REQUIRE_THROWS_WITH(ops::avg_pool2d_forward(x, {.kernel = 3, .padding = 2}, nullptr),
                      Catch::Contains("avg_pool2d: padding must be between 0 and half the kernel "
                                      "(3, 3), got (2, 2)"));
  REQUIRE_THROWS_WITH(ops::max_pool2d_forward(x, {.kernel = {7, 2}}, nullptr),
                      Catch::Contains("max_pool2d: a kernel height of 7 does not fit the input "
                                      "height 6 with padding 0"));
  REQUIRE_THROWS_WITH(ops::max_pool2d_forward(Tensor({2, 3, 6}), {.kernel = 2}, nullptr),
                      Catch::Contains("max_pool2d: x [B, C, IH, IW] has shape [2, 3, 6], expected [*, *, *, *]"));
  REQUIRE_THROWS_WITH(ops::avg_pool1d_forward(Tensor({2, 3, 6}), {.kernel = {1, 2}}, nullptr),
                      Catch::Contains("avg_pool1d: kernel must be one value for 1-D pooling, got (1, 2)"));
  ops::MaxPoolCache cache;
  ops::max_pool1d_forward(Tensor({2, 3, 6}), {.kernel = 2}, &cache);
  REQUIRE_THROWS_WITH(ops::max_pool1d_backward(Tensor({2, 3, 2}), cache),
                      Catch::Contains("max_pool1d_backward: dy [B, C, OL] has shape [2, 3, 2], expected [2, 3, 3]"));
}

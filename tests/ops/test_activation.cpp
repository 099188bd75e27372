#include "attn/ops/activation.hpp"

#include <algorithm>
#include <cmath>

#include "test_support.hpp"

using namespace attn;

namespace {

// Random inputs kept at least 0.1 away from 0, where relu has its kink.
Tensor away_from_zero(const Shape& shape, Rng& rng) {
  Tensor x = randn(shape, rng, 1.5f);
  for (float& v : x.values()) v = v >= 0 ? v + 0.1f : v - 0.1f;
  return x;
}

}  // namespace

TEST_CASE("activations by hand", "[unit][activation]") {
  const Tensor x = Tensor::from({4}, {-1, 0, 1, 2});
  CHECK_THAT(ops::tanh_forward(x, nullptr),
             test::close_to(Tensor::from({4}, {-0.7615942f, 0, 0.7615942f, 0.9640276f}), 1e-6));
  CHECK_THAT(ops::sigmoid_forward(x, nullptr),
             test::close_to(Tensor::from({4}, {0.2689414f, 0.5f, 0.7310586f, 0.8807971f}), 1e-6));
  CHECK_THAT(ops::relu_forward(x, nullptr), test::close_to(Tensor::from({4}, {0, 0, 1, 2}), 0));
  // PyTorch: F.gelu(torch.tensor([-1., 0, 1, 2])) and F.gelu(..., approximate='tanh').
  CHECK_THAT(ops::gelu_forward(x, ops::GeluApprox::none, nullptr),
             test::close_to(Tensor::from({4}, {-0.1586553f, 0, 0.8413447f, 1.9544997f}), 1e-6));
  CHECK_THAT(ops::gelu_forward(x, ops::GeluApprox::tanh, nullptr),
             test::close_to(Tensor::from({4}, {-0.1588080f, 0, 0.8411920f, 1.9545977f}), 1e-6));
  // The sigmoid neither overflows nor loses its tails for large |x|.
  const Tensor s = ops::sigmoid_forward(Tensor::from({2}, {-100, 100}), nullptr);
  CHECK(s.at(0) >= 0.0f);
  CHECK(s.at(0) < 1e-30f);
  CHECK(s.at(1) == 1.0f);
}

TEST_CASE("sigmoid_fast is sigmoid to a few ulp and neither overflows", "[unit][activation]") {
  // The two forms of the library's sigmoid (activation.hpp): the vectorising one the cells use
  // against the exact one, on a grid over every exponent of x that matters.
  double worst = 0;
  for (float x = -87.0f; x <= 87.0f; x += 0.0137f) {
    const float exact = ops::sigmoid(x), fast = ops::sigmoid_fast(x);
    worst = std::max(worst, std::fabs(static_cast<double>(fast) - exact) / exact);
  }
  CHECK(worst < 5e-7);   // 4 ulp of float
  CHECK(ops::sigmoid(0.0f) == 0.5f);
  CHECK(ops::sigmoid_fast(0.0f) == 0.5f);
  for (float x : {100.0f, 1e30f, INFINITY}) {
    CHECK(ops::sigmoid(x) == 1.0f);
    CHECK(ops::sigmoid_fast(x) == 1.0f);
    CHECK(ops::sigmoid(-x) >= 0.0f);
    CHECK(ops::sigmoid(-x) < 1e-38f);
    CHECK(ops::sigmoid_fast(-x) >= 0.0f);
    CHECK(ops::sigmoid_fast(-x) < 1e-38f);
  }
  CHECK(ops::sigmoid(-100.0f) > 0.0f);   // e^-100, a subnormal: the tail is kept
}

TEST_CASE("activation backwards match finite differences", "[gradcheck][activation]") {
  Rng rng(13);
  Tensor x = away_from_zero({3, 5}, rng);
  const Tensor r = randn({3, 5}, rng);
  SECTION("tanh") {
    ops::TanhCache cache;
    ops::tanh_forward(x, &cache);
    auto loss = [&] { return test::dot(r, ops::tanh_forward(x, nullptr)); };
    CHECK_THAT(ops::tanh_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
  }
  SECTION("sigmoid") {
    ops::SigmoidCache cache;
    ops::sigmoid_forward(x, &cache);
    auto loss = [&] { return test::dot(r, ops::sigmoid_forward(x, nullptr)); };
    CHECK_THAT(ops::sigmoid_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
  }
  SECTION("relu") {
    ops::ReluCache cache;
    ops::relu_forward(x, &cache);
    auto loss = [&] { return test::dot(r, ops::relu_forward(x, nullptr)); };
    CHECK_THAT(ops::relu_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
  }
  for (ops::GeluApprox approx : {ops::GeluApprox::none, ops::GeluApprox::tanh}) {
    INFO("gelu approx " << static_cast<int>(approx));
    ops::GeluCache cache;
    ops::gelu_forward(x, approx, &cache);
    auto loss = [&] { return test::dot(r, ops::gelu_forward(x, approx, nullptr)); };
    CHECK_THAT(ops::gelu_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
  }
}

TEST_CASE("activation_forward/backward dispatch to the named activation", "[gradcheck][activation]") {
  Rng rng(21);
  Tensor x = away_from_zero({2, 3}, rng);
  const Tensor r = randn({2, 3}, rng);
  for (const char* name : {"identity", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh"}) {
    INFO(name);
    const ops::Activation kind = ops::activation_from_string(name);
    CHECK(std::string(ops::activation_name(kind)) == name);
    ops::ActivationCache cache;
    ops::activation_forward(x, kind, &cache);
    auto loss = [&] { return test::dot(r, ops::activation_forward(x, kind, nullptr)); };
    const Tensor dx = ops::activation_backward(r, cache);
    CHECK_FALSE(dx.shares_storage_with(r));
    CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
  }
}

TEST_CASE("gelu matches the double-precision erf formula over [-10, 10]", "[unit][activation]") {
  const int64_t n = 40001;   // above the threading threshold
  Tensor x({n});
  for (int64_t i = 0; i < n; ++i) x.at(i) = -10.0f + 20.0f * static_cast<float>(i) / (n - 1);
  Tensor want(x.shape()), want_grad(x.shape());
  for (int64_t i = 0; i < n; ++i) {
    const double v = x.at(i), cdf = 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
    want.at(i) = static_cast<float>(v * cdf);
    want_grad.at(i) = static_cast<float>(cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI));
  }
  ops::GeluCache cache;
  CHECK_THAT(ops::gelu_forward(x, ops::GeluApprox::none, &cache), test::close_to(want, 1.5e-6));
  CHECK_THAT(ops::gelu_backward(Tensor::full({n}, 1.0f), cache), test::close_to(want_grad, 1.5e-6));
}

TEST_CASE("activations: bad input is named in the message", "[unit][activation]") {
  REQUIRE_THROWS_AS(ops::activation_from_string("swish"), ConfigError);
  REQUIRE_THROWS_WITH(ops::activation_from_string("swish"),
                      Catch::Equals("unknown activation 'swish' (expected identity, tanh, sigmoid, "
                                    "relu, gelu or gelu_tanh)"));
  ops::TanhCache cache;
  ops::tanh_forward(Tensor({2, 3}), &cache);
  REQUIRE_THROWS_WITH(ops::tanh_backward(Tensor({3, 2}), cache),
                      Catch::Equals("tanh_backward: dy (shape of y) has shape [3, 2], expected [2, 3]"));
  REQUIRE_THROWS_WITH(ops::relu_forward(Tensor({2}, DType::i32), nullptr),
                      Catch::Contains("relu: x has dtype int32, expected float32"));
}

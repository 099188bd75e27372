#include "attn/ops/linear.hpp"

#include "test_support.hpp"

using namespace attn;

TEST_CASE("linear_forward by hand", "[unit][linear]") {
  const Tensor x = Tensor::from({2, 2}, {1, 2, -1, 0});
  const Tensor W = Tensor::from({3, 2}, {1, 0, 0, 1, 1, 1});   // [out = 3, in = 2]
  const Tensor b = Tensor::from({3}, {0.5f, -1, 2});
  CHECK_THAT(ops::linear_forward(x, W, b, nullptr),
             test::close_to(Tensor::from({2, 3}, {1.5f, 1, 5, -0.5f, -1, 1}), 1e-6));
  CHECK_THAT(ops::linear_forward(x, W, Tensor(), nullptr),   // no bias
             test::close_to(Tensor::from({2, 3}, {1, 2, 3, -1, 0, -1}), 1e-6));
}

TEST_CASE("linear_forward on [B, T, in] equals the flattened [B*T, in] product", "[unit][linear]") {
  Rng rng(1);
  const Tensor x = randn({2, 3, 4}, rng), W = randn({5, 4}, rng), b = randn({5}, rng);
  const Tensor y = ops::linear_forward(x, W, b, nullptr);
  CHECK(y.shape() == Shape{2, 3, 5});
  CHECK_THAT(y.reshape({6, 5}), test::close_to(ops::linear_forward(x.reshape({6, 4}), W, b, nullptr), 1e-6));
}

TEST_CASE("linear_backward matches finite differences", "[gradcheck][linear]") {
  Rng rng(7);   // fixed seed: a failure reproduces exactly
  Tensor x = randn({2, 3, 4}, rng), W = randn({5, 4}, rng), b = randn({5}, rng);
  const Tensor r = randn({2, 3, 5}, rng);   // loss = sum(r * y), so dloss/dy = r
  auto loss = [&] { return test::dot(r, ops::linear_forward(x, W, b, nullptr)); };
  ops::LinearCache cache;
  ops::linear_forward(x, W, b, &cache);
  // Parameter gradients accumulate: start from ones and expect ones + gradient.
  Tensor dW = Tensor::full(W.shape(), 1.0f), db = Tensor::full(b.shape(), 1.0f);
  const Tensor dx = ops::linear_backward(r, W, cache, dW, db);
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
  Tensor want_dW = test::numeric_grad(loss, W), want_db = test::numeric_grad(loss, b);
  for (float& v : want_dW.values()) v += 1.0f;
  for (float& v : want_db.values()) v += 1.0f;
  CHECK_THAT(dW, test::close_to(want_dW, 1e-2));
  CHECK_THAT(db, test::close_to(want_db, 1e-2));
}

TEST_CASE("linear_backward without bias matches finite differences", "[gradcheck][linear]") {
  Rng rng(8);
  Tensor x = randn({3, 4}, rng), W = randn({2, 4}, rng);
  const Tensor r = randn({3, 2}, rng);
  auto loss = [&] { return test::dot(r, ops::linear_forward(x, W, Tensor(), nullptr)); };
  ops::LinearCache cache;
  ops::linear_forward(x, W, Tensor(), &cache);
  Tensor dW = zeros_like(W), db;
  const Tensor dx = ops::linear_backward(r, W, cache, dW, db);
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
  CHECK_THAT(dW, test::close_to(test::numeric_grad(loss, W), 1e-2));
}

TEST_CASE("linear: the bias gradient on the threaded path is the column sum", "[unit][linear]") {
  Rng rng(5);
  const Tensor x = randn({256, 8}, rng), W = randn({600, 8}, rng), b = randn({600}, rng);
  ops::LinearCache cache;
  ops::linear_forward(x, W, b, &cache);
  const Tensor dy = randn({256, 600}, rng);
  Tensor dW = zeros_like(W), db = zeros_like(b);
  ops::linear_backward(dy, W, cache, dW, db);
  Tensor want({600});
  for (int64_t j = 0; j < 600; ++j) {
    double s = 0;
    for (int64_t i = 0; i < 256; ++i) s += dy.at(i * 600 + j);
    want.at(j) = static_cast<float>(s);
  }
  CHECK_THAT(db, test::close_to(want, 1e-4));
}

TEST_CASE("linear: bad shapes are named in the message", "[unit][linear]") {
  Rng rng(7);
  const Tensor x = randn({3, 4}, rng), W = randn({5, 4}, rng), b = randn({5}, rng);
  REQUIRE_THROWS_WITH(ops::linear_forward(x, Tensor({5, 3}), b, nullptr),
                      Catch::Contains("W [out, in] has shape [5, 3], expected [*, 4]"));
  REQUIRE_THROWS_WITH(ops::linear_forward(x, W, Tensor({4}), nullptr),
                      Catch::Equals("linear: b [out] has shape [4], expected [5]"));
  ops::LinearCache cache;
  ops::linear_forward(x, W, b, &cache);
  Tensor dW = zeros_like(W), db = zeros_like(b);
  REQUIRE_THROWS_WITH(ops::linear_backward(Tensor({3, 4}), W, cache, dW, db),
                      Catch::Equals("linear_backward: dy [..., out] has shape [3, 4], expected [3, 5]"));
  Tensor bad_dW({4, 5});
  REQUIRE_THROWS_WITH(ops::linear_backward(Tensor({3, 5}), W, cache, bad_dW, db),
                      Catch::Contains("dW [out, in] has shape [4, 5], expected [5, 4]"));
}

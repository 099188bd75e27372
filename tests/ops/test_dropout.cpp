#include "attn/ops/dropout.hpp"

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("dropout: element i keeps iff uniform number counter+i is >= p", "[unit][dropout]") {
  const int64_t n = 10000;
  const float p = 0.25f;
  const Tensor x = Tensor::full({100, 100}, 3.0f);
  Rng rng(17), replay(17);
  rng.uniform();     // start mid-stream: the mask must follow the counter, not restart
  replay.uniform();
  ops::DropoutCache cache;
  const Tensor y = ops::dropout_forward(x, p, /*training=*/true, rng, &cache);
  CHECK(rng.state().counter == 1 + n);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = replay.uniform() >= p;
    kept += keep;
    REQUIRE(cache.mask.at(i) == (keep ? 1.0f / (1.0f - p) : 0.0f));
    REQUIRE(y.at(i) == (keep ? 3.0f / (1.0f - p) : 0.0f));
  }
  CHECK(std::fabs(double(kept) / n - 0.75) < 0.03);
  // Backward multiplies by the same mask.
  const Tensor dx = ops::dropout_backward(Tensor::full({100, 100}, 2.0f), cache);
  for (int64_t i = 0; i < n; ++i) REQUIRE(dx.at(i) == 2.0f * cache.mask.at(i));
}

TEST_CASE("dropout: p = 0 or inference is the identity and draws nothing", "[unit][dropout]") {
  Rng rng(3);
  const Tensor x = randn({4, 6}, rng);
  const RngState before = rng.state();
  ops::DropoutCache cache;
  CHECK(ops::dropout_forward(x, 0.5f, /*training=*/false, rng, &cache).shares_storage_with(x));
  CHECK(ops::dropout_forward(x, 0.0f, /*training=*/true, rng, &cache).shares_storage_with(x));
  CHECK(rng.state().counter == before.counter);
  const Tensor dy = randn({4, 6}, rng);
  CHECK(ops::dropout_backward(dy, cache).shares_storage_with(dy));
}

TEST_CASE("dropout: masks do not depend on the thread count", "[unit][dropout]") {
  const Tensor x = Tensor::full({200000}, 1.0f);   // above the parallel thresholds
  Tensor y[2];
  for (int t = 0; t < 2; ++t) {
    set_num_threads(t + 1);
    Rng rng(99);
    y[t] = ops::dropout_forward(x, 0.1f, /*training=*/true, rng, nullptr);
  }
  CHECK_THAT(y[1], test::close_to(y[0], 0.0));
}

TEST_CASE("dropout_backward matches finite differences for a fixed mask", "[gradcheck][dropout]") {
  Rng rng(41);
  Tensor x = randn({3, 7}, rng);
  const Tensor r = randn({3, 7}, rng);
  auto forward = [&](ops::DropoutCache* cache) {
    Rng fixed(RngState{/*seed=*/5, /*counter=*/12});   // the same mask on every call
    return ops::dropout_forward(x, 0.4f, /*training=*/true, fixed, cache);
  };
  auto loss = [&] { return test::dot(r, forward(nullptr)); };
  ops::DropoutCache cache;
  forward(&cache);
  CHECK_THAT(ops::dropout_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
}

TEST_CASE("dropout: p outside [0, 1) and mismatched dy are reported", "[unit][dropout]") {
  Rng rng(1);
  const Tensor x({2, 3});
  REQUIRE_THROWS_AS(ops::dropout_forward(x, 1.0f, true, rng, nullptr), ConfigError);
  REQUIRE_THROWS_WITH(ops::dropout_forward(x, 1.0f, true, rng, nullptr),
                      Catch::Contains("dropout: p must be in [0, 1), got 1"));
  REQUIRE_THROWS_WITH(ops::dropout_forward(x, -0.5f, false, rng, nullptr),
                      Catch::Contains("got -0.5"));
  ops::DropoutCache cache;
  ops::dropout_forward(x, 0.5f, true, rng, &cache);
  REQUIRE_THROWS_WITH(ops::dropout_backward(Tensor({3, 2}), cache),
                      Catch::Contains("dropout_backward: dy has shape [3, 2], expected [2, 3]"));
}

#include "attn/ops/cross_entropy.hpp"

#include <cmath>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// Per-row losses straight from the definition, in double; ignored rows 0.
std::vector<double> reference_losses(const Tensor& logits, const Tensor& targets,
                                     const ops::CrossEntropyOptions& o) {
  const int64_t N = logits.dim(0), V = logits.dim(1);
  std::vector<double> out(N, 0.0);
  for (int64_t i = 0; i < N; ++i) {
    const int32_t t = targets.idata()[i];
    if (t == o.ignore_index) continue;
    double m = -INFINITY, s = 0, mean_nlp = 0;
    for (int64_t v = 0; v < V; ++v) m = std::max(m, double(logits.at(i * V + v)));
    for (int64_t v = 0; v < V; ++v) s += std::exp(logits.at(i * V + v) - m);
    const double lse = m + std::log(s);
    for (int64_t v = 0; v < V; ++v) mean_nlp += (lse - logits.at(i * V + v)) / V;
    out[i] = (1 - o.label_smoothing) * (lse - logits.at(i * V + t)) + o.label_smoothing * mean_nlp;
  }
  return out;
}

}  // namespace

TEST_CASE("cross_entropy: a hand-checked example with count, sum and accuracy", "[unit][cross_entropy]") {
  // Row 0: p = (1/2, 1/2), target 0 ties the max (counts as correct): loss ln 2.
  // Row 1: p = (1/4, 3/4), target 0 is not the max: loss ln 4.
  const Tensor logits = Tensor::from({2, 2}, {0, 0, 0, std::log(3.0f)});
  const Tensor targets = Tensor::from_ints({2}, {0, 0});
  const ops::CrossEntropyResult res = ops::cross_entropy_forward(logits, targets, {}, nullptr);
  CHECK(res.count == 2);
  CHECK(res.correct == 1);
  CHECK(res.sum == Approx(3 * std::log(2.0)).epsilon(1e-6));
  CHECK(res.loss == Approx(1.5 * std::log(2.0)).epsilon(1e-6));
  CHECK_THAT(res.losses, test::close_to(Tensor::from({2}, {std::log(2.0f), std::log(4.0f)}), 1e-6));
}

TEST_CASE("cross_entropy: ignore_index and label smoothing follow the definition", "[unit][cross_entropy]") {
  Rng rng(21);
  const Tensor logits = randn({6, 5}, rng, 3.0f);
  const Tensor targets = Tensor::from_ints({6}, {3, 0, 4, 1, 0, 2});
  const ops::CrossEntropyOptions o{/*ignore_index=*/0, /*label_smoothing=*/0.1f};
  const auto ref = reference_losses(logits, targets, o);
  const ops::CrossEntropyResult res = ops::cross_entropy_forward(logits, targets, o, nullptr);
  double sum = 0;
  for (double l : ref) sum += l;
  CHECK(res.count == 4);
  CHECK(res.sum == Approx(sum).epsilon(1e-5));
  CHECK(res.loss == Approx(sum / 4).epsilon(1e-5));
  for (int64_t i = 0; i < 6; ++i) CHECK(res.losses.at(i) == Approx(ref[i]).epsilon(1e-5).margin(1e-6));
  CHECK(res.losses.at(1) == 0.0f);
  CHECK(res.losses.at(4) == 0.0f);

  // With every row ignored the loss is 0, not NaN, and so is the gradient.
  ops::CrossEntropyCache cache;
  const Tensor pads = Tensor::from_ints({6}, {0, 0, 0, 0, 0, 0});
  const auto none = ops::cross_entropy_forward(logits, pads, o, &cache);
  CHECK(none.count == 0);
  CHECK(none.loss == 0.0f);
  CHECK_THAT(ops::cross_entropy_backward(1.0f, cache), test::close_to(Tensor({6, 5}), 0.0));
}

TEST_CASE("cross_entropy: large inputs match the definition, for any thread count", "[unit][cross_entropy]") {
  Rng rng(22);
  const Tensor logits = randn({64, 1000}, rng, 5.0f);   // above the parallel threshold
  Tensor targets({64}, DType::i32);
  for (int64_t i = 0; i < 64; ++i) targets.idata()[i] = int32_t(rng.uniform_int(1000));
  targets.idata()[5] = 0;
  const ops::CrossEntropyOptions o{/*ignore_index=*/0, /*label_smoothing=*/0.2f};
  const auto ref = reference_losses(logits, targets, o);
  ops::CrossEntropyCache c1, c2;
  set_num_threads(1);
  const auto one = ops::cross_entropy_forward(logits, targets, o, &c1);
  const Tensor g1 = ops::cross_entropy_backward(1.0f, c1);
  set_num_threads(2);
  const auto two = ops::cross_entropy_forward(logits, targets, o, &c2);
  const Tensor g2 = ops::cross_entropy_backward(1.0f, c2);
  CHECK(one.sum == two.sum);
  CHECK(one.correct == two.correct);
  CHECK_THAT(g1, test::close_to(g2, 0.0));
  for (int64_t i = 0; i < 64; ++i) CHECK(one.losses.at(i) == Approx(ref[i]).epsilon(1e-5).margin(1e-6));
  // Each counted row of dlogits sums to 0 (softmax and the smoothed target both sum to 1).
  for (int64_t i = 0; i < 64; ++i) {
    double s = 0;
    for (int64_t v = 0; v < 1000; ++v) s += g1.at(i * 1000 + v);
    CHECK(std::fabs(s) < 1e-6);
  }
}

TEST_CASE("cross_entropy_backward matches finite differences", "[gradcheck][cross_entropy]") {
  Rng rng(23);
  Tensor logits = randn({5, 7}, rng);
  const Tensor targets = Tensor::from_ints({5}, {2, 0, 6, 0, 3});
  for (float eps : {0.0f, 0.15f}) {
    const ops::CrossEntropyOptions o{/*ignore_index=*/0, /*label_smoothing=*/eps};
    auto loss = [&] { return double(ops::cross_entropy_forward(logits, targets, o, nullptr).loss); };
    ops::CrossEntropyCache cache;
    ops::cross_entropy_forward(logits, targets, o, &cache);
    const Tensor numeric = test::numeric_grad(loss, logits);
    const Tensor dlogits = ops::cross_entropy_backward(1.0f, cache);
    CHECK_THAT(dlogits, test::close_to(numeric, 1e-2));
    for (int64_t v = 0; v < 7; ++v) CHECK(dlogits.at(1 * 7 + v) == 0.0f);   // ignored row

    // dloss scales the gradient; the in-place variant writes the same values over the logits.
    const Tensor scaled = ops::cross_entropy_backward(2.5f, cache);
    for (int64_t i = 0; i < 35; ++i) CHECK(scaled.at(i) == Approx(2.5f * dlogits.at(i)).margin(1e-7));
    Tensor copy = logits.clone();
    ops::CrossEntropyCache in_place;
    ops::cross_entropy_forward(copy, targets, o, &in_place);
    const Tensor d = ops::cross_entropy_backward_inplace(1.0f, in_place);
    CHECK(d.shares_storage_with(copy));
    CHECK_THAT(d, test::close_to(dlogits, 0.0));
    REQUIRE_THROWS_WITH(ops::cross_entropy_backward_inplace(1.0f, in_place),
                        Catch::Contains("the cache is empty"));
  }
}

TEST_CASE("cross_entropy_forward_backward_inplace equals forward then backward", "[gradcheck][cross_entropy]") {
  Rng rng(24);
  const Tensor logits = randn({64, 1000}, rng, 4.0f);   // above the parallel threshold
  Tensor targets({64}, DType::i32);
  for (int64_t i = 0; i < 64; ++i) targets.idata()[i] = int32_t(rng.uniform_int(1000));
  targets.idata()[7] = 0;
  for (float eps : {0.0f, 0.1f}) {
    const ops::CrossEntropyOptions o{/*ignore_index=*/0, /*label_smoothing=*/eps};
    ops::CrossEntropyCache cache;
    const ops::CrossEntropyResult two = ops::cross_entropy_forward(logits, targets, o, &cache);
    const Tensor dlogits = ops::cross_entropy_backward(0.5f, cache);
    double nll = 0;   // the plain NLL is the eps = 0 loss
    for (int64_t i = 0; i < 64; ++i)
      if (i != 7) nll += reference_losses(logits, targets, {0, 0.0f})[i];
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      Tensor work = logits.clone();
      const ops::CrossEntropyResult one = ops::cross_entropy_forward_backward_inplace(work, targets, o, 0.5f);
      INFO("eps " << eps << ", threads " << threads);
      CHECK(one.count == two.count);
      CHECK(one.correct == two.correct);
      CHECK(one.sum == two.sum);
      CHECK(one.nll_sum == Approx(nll).epsilon(1e-5));
      CHECK(two.nll_sum == Approx(nll).epsilon(1e-5));
      CHECK_THAT(one.losses, test::close_to(two.losses, 0.0));
      CHECK_THAT(work, test::close_to(dlogits, 1e-8));
      for (int64_t v = 0; v < 1000; ++v) CHECK(work.at(7 * 1000 + v) == 0.0f);   // ignored row
    }
  }
  Tensor bad = logits.clone();
  REQUIRE_THROWS_WITH(ops::cross_entropy_forward_backward_inplace(bad, Tensor::from_ints({2}, {1, 2}), {}, 1.0f),
                      Catch::Contains("cross_entropy: targets [N] has shape [2], expected [64]"));
}

TEST_CASE("cross_entropy: bad targets and shapes are reported with row and value", "[unit][cross_entropy]") {
  const Tensor logits({3, 5});
  const ops::CrossEntropyOptions pad0{/*ignore_index=*/0, /*label_smoothing=*/0.0f};
  REQUIRE_THROWS_AS(ops::cross_entropy_forward(logits, Tensor::from_ints({3}, {1, 2, 7}), {}, nullptr),
                    DataError);
  REQUIRE_THROWS_WITH(ops::cross_entropy_forward(logits, Tensor::from_ints({3}, {1, 2, 7}), {}, nullptr),
                      Catch::Contains("target 7 at row 2 is outside the vocabulary [0, 5) and is not "
                                      "ignore_index (-1)"));
  REQUIRE_THROWS_WITH(ops::cross_entropy_forward(logits, Tensor::from_ints({3}, {0, -1, 0}), pad0, nullptr),
                      Catch::Contains("target -1 at row 1"));
  REQUIRE_THROWS_WITH(ops::cross_entropy_forward(logits, Tensor({3}), {}, nullptr),
                      Catch::Contains("cross_entropy: targets [N] has dtype float32, expected int32"));
  REQUIRE_THROWS_WITH(ops::cross_entropy_forward(logits, Tensor::from_ints({2}, {1, 2}), {}, nullptr),
                      Catch::Contains("cross_entropy: targets [N] has shape [2], expected [3]"));
  REQUIRE_THROWS_WITH(ops::cross_entropy_forward(Tensor({15}), Tensor::from_ints({3}, {1, 2, 3}), {}, nullptr),
                      Catch::Contains("cross_entropy: logits [N, V] has shape [15], expected [*, *]"));
  REQUIRE_THROWS_AS(ops::cross_entropy_forward(logits, Tensor::from_ints({3}, {1, 2, 3}),
                                               {/*ignore_index=*/-1, /*label_smoothing=*/1.0f}, nullptr),
                    ConfigError);
  REQUIRE_THROWS_WITH(ops::cross_entropy_backward(1.0f, ops::CrossEntropyCache{}),
                      Catch::Contains("the cache is empty"));
}

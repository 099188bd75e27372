// NTM addressing (Graves et al. 2014, eq. 6, 8, 9): cases by hand, finite-difference gradients
// of every input, the multiply-add counts, bad inputs.
#include "attn/ops/addressing.hpp"

#include <cmath>

#include "attn/core/flops.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("cosine_similarity by hand", "[unit][addressing]") {
  // k = [1, 0] against rows at 0°, 90°, 180°, 45° and a zero row (0, not NaN, thanks to eps).
  const Tensor k = Tensor::from({1, 2}, {1, 0});
  const Tensor mem = Tensor::from({1, 5, 2}, {1, 0, 0, 2, -3, 0, 1, 1, 0, 0});
  flops::reset();
  const Tensor K = ops::cosine_similarity_forward(k, mem, nullptr);
  CHECK_THAT(K, test::close_to(Tensor::from({1, 5}, {1, 0, -1, static_cast<float>(1 / std::sqrt(2.0)), 0}), 1e-6));
  CHECK(flops::count() == 2 + 2 * 5 * 2);   // ||k|| once, then dot and norm per row
}

TEST_CASE("cosine_similarity_backward matches finite differences", "[gradcheck][addressing]") {
  Rng rng(51);
  Tensor k = randn({2, 4}, rng), mem = randn({2, 5, 4}, rng);
  const Tensor r = randn({2, 5}, rng);
  auto loss = [&] { return test::dot(r, ops::cosine_similarity_forward(k, mem, nullptr)); };
  ops::CosineSimilarityCache cache;
  ops::cosine_similarity_forward(k, mem, &cache);
  const ops::CosineSimilarityGrads g = ops::cosine_similarity_backward(r, cache);
  CHECK_THAT(g.dk, test::close_to(test::numeric_grad(loss, k)));
  CHECK_THAT(g.dmem, test::close_to(test::numeric_grad(loss, mem)));
}

TEST_CASE("circular_conv by hand: shifts move the weighting and wrap around", "[unit][addressing]") {
  const Tensor w = Tensor::from({3, 5}, {1, 0, 0, 0, 0,    //
                                        1, 0, 0, 0, 0,    //
                                        0, 0.5f, 0, 0, 0.5f});
  // Shifts -1, 0, +1: all on +1; all on -1 (wraps to row 4); half 0, half +1.
  const Tensor s = Tensor::from({3, 3}, {0, 0, 1, 1, 0, 0, 0, 0.5f, 0.5f});
  flops::reset();
  CHECK_THAT(ops::circular_conv_forward(w, s, nullptr),
             test::close_to(Tensor::from({3, 5}, {0, 1, 0, 0, 0,    //
                                                 0, 0, 0, 0, 1,    //
                                                 0.25f, 0.25f, 0.25f, 0, 0.25f}), 1e-6));
  CHECK(flops::count() == 3 * 5 * 3);
  // More shifts than rows wrap around more than once: on N = 2, shift +2 is no shift.
  CHECK_THAT(ops::circular_conv_forward(Tensor::from({1, 2}, {0.25f, 0.75f}),
                                        Tensor::from({1, 5}, {0, 0, 0, 0, 1}), nullptr),
             test::close_to(Tensor::from({1, 2}, {0.25f, 0.75f}), 1e-6));
}

TEST_CASE("circular_conv_backward matches finite differences", "[gradcheck][addressing]") {
  Rng rng(52);
  Tensor w = randn({2, 6}, rng), s = randn({2, 3}, rng);
  const Tensor r = randn({2, 6}, rng);
  auto loss = [&] { return test::dot(r, ops::circular_conv_forward(w, s, nullptr)); };
  ops::CircularConvCache cache;
  ops::circular_conv_forward(w, s, &cache);
  const ops::CircularConvGrads g = ops::circular_conv_backward(r, cache);
  CHECK_THAT(g.dw, test::close_to(test::numeric_grad(loss, w)));
  CHECK_THAT(g.ds, test::close_to(test::numeric_grad(loss, s)));
}

TEST_CASE("sharpen by hand, stable for large gamma and zero weights", "[unit][addressing]") {
  // [1/2, 1/4, 1/4]^2 = [1/4, 1/16, 1/16], normalised: [2/3, 1/6, 1/6].
  const Tensor w = Tensor::from({2, 3}, {0.5f, 0.25f, 0.25f, 0.2f, 0.3f, 0.5f});
  const Tensor y = ops::sharpen_forward(w, Tensor::from({2}, {2.0f, 1.0f}), nullptr);
  CHECK_THAT(y, test::close_to(Tensor::from({2, 3}, {2.0f / 3, 1.0f / 6, 1.0f / 6, 0.2f, 0.3f, 0.5f}), 1e-6));

  // w^γ underflows float for every entry here (1e-3^200), yet the ratio is exact: [2^-200, 1].
  const Tensor big = ops::sharpen_forward(Tensor::from({1, 2}, {1e-3f, 2e-3f}), Tensor::from({1}, {200.0f}), nullptr);
  CHECK(big.at(1) == Approx(1.0));
  CHECK(big.at(0) == Approx(0.0).margin(1e-30));

  // A zero weight stays zero, and its gradient is finite: 1/Σw at γ = 1, 0 for γ > 1.
  ops::SharpenCache cache;
  ops::sharpen_forward(Tensor::from({2, 2}, {0, 0.5f, 0, 0.5f}), Tensor::from({2}, {1.0f, 2.0f}), &cache);
  const ops::SharpenGrads g = ops::sharpen_backward(Tensor::from({2, 2}, {1, 0, 1, 0}), cache);
  CHECK_THAT(g.dw, test::close_to(Tensor::from({2, 2}, {2, 0, 0, 0}), 1e-6));
  CHECK(std::isfinite(g.dgamma.at(0)));
  CHECK(std::isfinite(g.dgamma.at(1)));
}

TEST_CASE("sharpen_backward matches finite differences", "[gradcheck][addressing]") {
  Rng rng(53);
  Tensor w = rand_uniform({3, 5}, rng, 0.1f, 1.0f), gamma = rand_uniform({3}, rng, 1.5f, 3.0f);
  const Tensor r = randn({3, 5}, rng);
  auto loss = [&] { return test::dot(r, ops::sharpen_forward(w, gamma, nullptr)); };
  ops::SharpenCache cache;
  ops::sharpen_forward(w, gamma, &cache);
  const ops::SharpenGrads g = ops::sharpen_backward(r, cache);
  CHECK_THAT(g.dw, test::close_to(test::numeric_grad(loss, w)));
  CHECK_THAT(g.dgamma, test::close_to(test::numeric_grad(loss, gamma)));
}

TEST_CASE("addressing: bad inputs are named in the message", "[unit][addressing]") {
  REQUIRE_THROWS_AS(ops::cosine_similarity_forward(Tensor({2, 3}), Tensor({2, 5, 4}), nullptr), ShapeError);
  REQUIRE_THROWS_WITH(ops::cosine_similarity_forward(Tensor({2, 3}), Tensor({2, 5, 4}), nullptr),
                      Catch::Contains("cosine_similarity: k [B, M] has shape [2, 3], expected [2, 4]"));
  REQUIRE_THROWS_WITH(ops::circular_conv_forward(Tensor({2, 5}), Tensor({2, 4}), nullptr),
                      Catch::Contains("circular_conv: s [B, S] has 4 shifts, expected an odd number"));
  REQUIRE_THROWS_AS(ops::sharpen_forward(Tensor::full({1, 3}, 0.3f), Tensor::from({1}, {0.5f}), nullptr),
                    DataError);
  REQUIRE_THROWS_WITH(ops::sharpen_forward(Tensor::full({1, 3}, 0.3f), Tensor::from({1}, {0.5f}), nullptr),
                      Catch::Contains("sharpen: gamma[0] = 0.500000, expected a finite value >= 1"));
  REQUIRE_THROWS_WITH(ops::sharpen_forward(Tensor::from({1, 2}, {0.5f, -0.25f}), Tensor::from({1}, {2.0f}), nullptr),
                      Catch::Contains("sharpen: w[0, 1] = -0.250000, expected a finite weight >= 0"));
  REQUIRE_THROWS_WITH(ops::sharpen_forward(Tensor({2, 2}), Tensor::full({2}, 2.0f), nullptr),
                      Catch::Contains("sharpen: row 0 of w is all zero"));
}

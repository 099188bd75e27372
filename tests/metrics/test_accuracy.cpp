#include "attn/metrics/accuracy.hpp"

#include <cmath>

#include "test_support.hpp"

using namespace attn;

TEST_CASE("accuracy: tokens and sequences count only positions before the length", "[unit][accuracy]") {
  const Tensor target = Tensor::from_ints({3, 3}, {4, 5, 2,  6, 2, 0,  7, 7, 2});
  const Tensor pred = Tensor::from_ints({3, 3}, {4, 5, 2,  6, 9, 9,  7, 8, 2});   // padding ignored
  const Tensor len = Tensor::from_ints({3}, {3, 2, 3});
  const metrics::AccuracyCounts c = metrics::count_correct(pred, target, len);
  CHECK(c.correct_tokens == 6);
  CHECK(c.tokens == 8);
  CHECK(c.correct_sequences == 1);
  CHECK(c.token_accuracy() == Approx(0.75));
  CHECK(c.sequence_accuracy() == Approx(1.0 / 3));
  metrics::AccuracyCounts sum = c;
  sum += c;
  CHECK(sum.tokens == 16);
  REQUIRE_THROWS_WITH(metrics::count_correct(pred, target, Tensor::from_ints({3}, {3, 4, 1})),
                      Catch::Contains("len[1] = 4 is outside [0, 3]"));
  REQUIRE_THROWS_WITH(metrics::count_correct(Tensor::from_ints({1, 3}, {1, 2, 3}), target, len),
                      Catch::Contains("count_correct: pred [N, L] has shape [1, 3], expected [3, 3]"));
}

TEST_CASE("perplexity and bits from a mean NLL", "[unit][accuracy]") {
  CHECK(metrics::perplexity(std::log(40.0)) == Approx(40.0));
  CHECK(metrics::perplexity(0.0) == 1.0);
  CHECK(metrics::nats_to_bits(std::log(2.0) * 3) == Approx(3.0));
}

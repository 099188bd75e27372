#include "attn/nn/positional_encoding.hpp"

#include <cmath>

#include "test_support.hpp"

using namespace attn;

TEST_CASE("sinusoidal_encoding: rows 0 and 1 for d_model 4", "[unit][positional]") {
  // pos 1: sin(1), cos(1), sin(1/100), cos(1/100)
  const Tensor pe = nn::sinusoidal_encoding(3, 4);
  REQUIRE(pe.shape() == Shape{3, 4});
  CHECK_THAT(
      pe.rows(0, 2),
      test::close_to(Tensor::from({2, 4}, {0, 1, 0, 1, 0.84147f, 0.54030f, 0.00999983f, 0.99995f}), 1e-5));
  const Tensor odd = nn::sinusoidal_encoding(2, 3);   // an odd width ends on a sine
  CHECK(odd.at(5) == Approx(std::sin(1.0 / std::pow(10000.0, 2.0 / 3.0))).epsilon(1e-6));
}

TEST_CASE("LearnedPositionalEmbedding adds the rows at the offset", "[unit][positional]") {
  Rng rng(1);
  nn::LearnedPositionalEmbedding pos(4, 2, "dec/pos", rng);
  CHECK(pos.table.name == "dec/pos/table");
  pos.table.value = Tensor::from({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  const Tensor x = Tensor::from({2, 2, 2}, {1, 1, 1, 1, 2, 2, 2, 2});
  CHECK_THAT(pos.forward(x, /*offset=*/1),
             test::close_to(Tensor::from({2, 2, 2}, {11, 12, 21, 22, 12, 13, 22, 23}), 1e-6));
}

TEST_CASE("LearnedPositionalEmbedding backward matches finite differences", "[gradcheck][positional]") {
  Rng rng(5);
  nn::LearnedPositionalEmbedding pos(5, 3, "pos", rng);
  Tensor x = randn({2, 3, 3}, rng);
  const Tensor r = randn({2, 3, 3}, rng);
  auto loss = [&] { return test::dot(r, pos.forward(x, 2)); };
  pos.backward(r, 2);
  CHECK_THAT(pos.table.grad, test::close_to(test::numeric_grad(loss, pos.table.value), 1e-2));
  CHECK_THAT(r, test::close_to(test::numeric_grad(loss, x), 1e-2));   // dx = dy
}

TEST_CASE("positional encodings: bad inputs are reported", "[unit][positional]") {
  Rng rng(1);
  nn::LearnedPositionalEmbedding pos(4, 2, "pos", rng);
  REQUIRE_THROWS_WITH(pos.forward(Tensor({1, 3, 2}), 2),
                      Catch::Contains("positions [2, 5) do not fit a table of 4 positions"));
  Tensor x({1, 3, 5});
  REQUIRE_THROWS_WITH(nn::add_positional_encoding(x, nn::sinusoidal_encoding(8, 4)),
                      Catch::Contains("positional encoding: table [L, D] has shape [8, 4], expected [*, 5]"));
  REQUIRE_THROWS_AS(nn::sinusoidal_encoding(4, 0), ConfigError);
}

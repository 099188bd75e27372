#include "attn/nn/layers.hpp"

#include "attn/nn/init.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("layers: glorot bound and parameter names", "[unit][layers]") {
  Rng rng(1);
  nn::Linear lin(4, 3, "enc/proj", rng);
  CHECK(lin.W.name == "enc/proj/W");
  CHECK(lin.b.name == "enc/proj/b");
  CHECK(lin.params().size() == 2);
  const float bound = std::sqrt(6.0f / 7.0f);
  for (float w : lin.W.value.values()) CHECK(std::fabs(w) <= bound);
  nn::Linear nobias(4, 3, "out", rng, /*bias=*/false);
  CHECK(nobias.params().size() == 1);
  nn::Embedding emb(5, 3, "emb", rng, 1.0f, /*padding_id=*/0);
  for (float e : emb.table.value[0].values()) CHECK(e == 0.0f);
  REQUIRE_THROWS_AS(nn::glorot_uniform({}, rng), ShapeError);
}

TEST_CASE("layers: feed-forward backward matches finite differences", "[gradcheck][layers]") {
  Rng rng(7), drop_rng(3);
  nn::FeedForward ff(4, 6, ops::Activation::gelu, "ffn", rng);
  Tensor x = randn({2, 3, 4}, rng);
  const Tensor r = randn({2, 3, 4}, rng);
  // Dropout with a fixed stream: every evaluation of the loss sees the same mask.
  auto run = [&](nn::FeedForwardCache* cache) {
    Rng fixed(drop_rng.state());
    return ff.forward(x, 0.25f, /*training=*/true, fixed, cache);
  };
  auto loss = [&] { return test::dot(r, run(nullptr)); };
  nn::FeedForwardCache cache;
  run(&cache);
  zero_grads(ff.params());
  const Tensor dx = ff.backward(r, cache);
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
  for (Param* p : ff.params()) {
    INFO(p->name);
    CHECK_THAT(p->grad, test::close_to(test::numeric_grad(loss, p->value), 1e-2));
  }
}

TEST_CASE("layers: layer norm layer normalises and back-propagates", "[gradcheck][layers]") {
  Rng rng(11);
  nn::LayerNorm ln(5, "ln");
  ln.gamma.value = randn({5}, rng);
  ln.gamma.grad = zeros_like(ln.gamma.value);
  Tensor x = randn({3, 5}, rng);
  const Tensor r = randn({3, 5}, rng);
  auto loss = [&] { return test::dot(r, ln.forward(x, nullptr)); };
  ops::LayerNormCache cache;
  ln.forward(x, &cache);
  const Tensor dx = ln.backward(r, cache);
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
  CHECK_THAT(ln.gamma.grad, test::close_to(test::numeric_grad(loss, ln.gamma.value), 1e-2));
  CHECK_THAT(ln.beta.grad, test::close_to(test::numeric_grad(loss, ln.beta.value), 1e-2));
}

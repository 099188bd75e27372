#include "attn/nn/multi_head_attention.hpp"

#include <functional>

#include "test_support.hpp"

using namespace attn;
using ops::AttentionMask;

namespace {

void set_identity(Tensor& w) {
  w.zero();
  for (int64_t i = 0; i < w.dim(0); ++i) w.at(i * w.dim(1) + i) = 1.0f;
}

void check_param_grads(nn::MultiHeadAttention& mha, const std::function<double()>& loss) {
  for (Param* p : mha.params()) {
    INFO("param " << p->name);
    CHECK_THAT(p->grad, test::close_to(test::numeric_grad(loss, p->value), 1e-2));
  }
}

}  // namespace

TEST_CASE("MultiHeadAttention: uniform attention averages the values", "[unit][mha]") {
  // W_q = W_k = 0 make every score equal, so with W_v = W_o = I each output row is the mean of
  // the visible value rows: all of them, or the prefix 0..t under a causal mask.
  Rng rng(1);
  nn::MultiHeadAttention mha(2, 2, "attn", rng);
  mha.w_q.value.zero();
  mha.w_k.value.zero();
  set_identity(mha.w_v.value);
  set_identity(mha.w_o.value);
  const Tensor x = Tensor::from({1, 3, 2}, {1, 2, 3, 4, 5, 9});
  CHECK_THAT(mha.forward(x, x, x, {}, nullptr),
             test::close_to(Tensor::from({1, 3, 2}, {3, 5, 3, 5, 3, 5}), 1e-6));
  CHECK_THAT(mha.forward(x, x, x, AttentionMask::causal_mask(), nullptr),
             test::close_to(Tensor::from({1, 3, 2}, {1, 2, 2, 3, 3, 5}), 1e-6));
  CHECK(mha.w_q.name == "attn/w_q");
  CHECK(mha.b_o.name == "attn/b_o");
}

TEST_CASE("MultiHeadAttention: weights per head sum to 1 and are zero on padding", "[unit][mha]") {
  Rng rng(2);
  nn::MultiHeadAttention mha(6, 3, "attn", rng);
  const Tensor query = randn({2, 4, 6}, rng), memory = randn({2, 5, 6}, rng);
  Tensor w;
  mha.forward(query, memory, memory, AttentionMask::padding(Tensor::from_ints({2}, {5, 2})), nullptr, &w);
  REQUIRE(w.shape() == Shape{2, 3, 4, 5});
  for (int64_t r = 0; r < 2 * 3 * 4; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < 5; ++j) sum += w.at(r * 5 + j);
    CHECK(sum == Approx(1.0).margin(1e-6));
    if (r >= 12)   // batch entry 1 sees keys 0 and 1 only
      for (int64_t j = 2; j < 5; ++j) CHECK(w.at(r * 5 + j) == 0.0f);
  }
}

TEST_CASE("MultiHeadAttention backward matches finite differences (cross-attention)", "[gradcheck][mha]") {
  Rng rng(7);
  nn::MultiHeadAttention mha(4, 2, "attn", rng);
  for (Param* p : mha.params()) p->value.copy_from(randn(p->value.shape(), rng, 0.5f));   // nonzero biases
  Tensor query = randn({2, 3, 4}, rng), key = randn({2, 4, 4}, rng), value = randn({2, 4, 4}, rng);
  const Tensor r = randn({2, 3, 4}, rng);
  const AttentionMask mask = AttentionMask::padding(Tensor::from_ints({2}, {4, 3}));
  auto loss = [&] { return test::dot(r, mha.forward(query, key, value, mask, nullptr)); };
  nn::MultiHeadAttentionCache cache;
  mha.forward(query, key, value, mask, &cache);
  zero_grads(mha.params());
  const nn::MultiHeadAttentionGrads g = mha.backward(r, cache);
  CHECK_THAT(g.dquery, test::close_to(test::numeric_grad(loss, query), 1e-2));
  CHECK_THAT(g.dkey, test::close_to(test::numeric_grad(loss, key), 1e-2));
  CHECK_THAT(g.dvalue, test::close_to(test::numeric_grad(loss, value), 1e-2));
  check_param_grads(mha, loss);
}

TEST_CASE("MultiHeadAttention backward sums the gradients of aliased inputs", "[gradcheck][mha]") {
  Rng rng(9);
  nn::MultiHeadAttention mha(4, 2, "attn", rng);
  Tensor x = randn({2, 5, 4}, rng), memory = randn({2, 3, 4}, rng);
  const Tensor r = randn({2, 5, 4}, rng);
  SECTION("self-attention, causal, both core paths") {
    for (ops::AttentionPath path : {ops::AttentionPath::materialised, ops::AttentionPath::streaming}) {
      ops::AttentionOptions opt;
      opt.path = path;
      opt.block_q = 2;
      opt.block_k = 2;
      const AttentionMask mask = AttentionMask::causal_mask();
      auto loss = [&] { return test::dot(r, mha.forward(x, x, x, mask, nullptr, nullptr, opt)); };
      nn::MultiHeadAttentionCache cache;
      mha.forward(x, x, x, mask, &cache, nullptr, opt);
      zero_grads(mha.params());
      const nn::MultiHeadAttentionGrads g = mha.backward(r, cache);
      CHECK(g.dkey.empty());
      CHECK(g.dvalue.empty());
      CHECK_THAT(g.dquery, test::close_to(test::numeric_grad(loss, x), 1e-2));
      check_param_grads(mha, loss);
    }
  }
  SECTION("cross-attention over one memory as key and value") {
    auto loss = [&] { return test::dot(r, mha.forward(x, memory, memory, {}, nullptr)); };
    nn::MultiHeadAttentionCache cache;
    mha.forward(x, memory, memory, {}, &cache);
    const nn::MultiHeadAttentionGrads g = mha.backward(r, cache);
    CHECK(g.dvalue.empty());
    CHECK_THAT(g.dquery, test::close_to(test::numeric_grad(loss, x), 1e-2));
    CHECK_THAT(g.dkey, test::close_to(test::numeric_grad(loss, memory), 1e-2));
  }
}

TEST_CASE("MultiHeadAttention: bad configurations and shapes are reported", "[unit][mha]") {
  Rng rng(3);
  REQUIRE_THROWS_AS(nn::MultiHeadAttention(10, 3, "attn", rng), ConfigError);
  REQUIRE_THROWS_WITH(nn::MultiHeadAttention(10, 3, "attn", rng),
                      Catch::Contains("d_model 10 is not divisible by heads 3"));
  nn::MultiHeadAttention mha(8, 2, "attn", rng);
  const Tensor query({2, 3, 8});
  REQUIRE_THROWS_WITH(
      mha.forward(query, Tensor({2, 5, 6}), Tensor({2, 5, 6}), {}, nullptr),
      Catch::Contains("multi-head attention: key [B, S, D] has shape [2, 5, 6], expected [2, *, 8]"));
  REQUIRE_THROWS_WITH(
      mha.forward(query, Tensor({2, 5, 8}), Tensor({2, 4, 8}), {}, nullptr),
      Catch::Contains("multi-head attention: value [B, S, D] has shape [2, 4, 8], expected [2, 5, 8]"));
  REQUIRE_THROWS_WITH(
      mha.forward(Tensor({2, 3, 4}), query, query, {}, nullptr),
      Catch::Contains("multi-head attention: query [B, T, D] has shape [2, 3, 4], expected [*, *, 8]"));
}

TEST_CASE("MultiHeadAttention: decoding with a KV cache equals the full causal forward", "[unit][mha]") {
  Rng rng(12);
  const int64_t B = 2, T = 5, D = 6;
  nn::MultiHeadAttention mha(D, 3, "attn", rng);
  for (Param* p : mha.params()) p->value.copy_from(randn(p->value.shape(), rng, 0.5f));
  const Tensor x = randn({B, T, D}, rng), memory = randn({B, 4, D}, rng);
  const Tensor self_full = mha.forward(x, x, x, AttentionMask::causal_mask(), nullptr);
  const Tensor cross_full = mha.forward(x, memory, memory, {}, nullptr);
  nn::KVCache self = mha.new_kv_cache(B, T), cross = mha.new_kv_cache(B, 4);
  mha.append_kv(memory, memory, cross);
  for (int64_t t = 0; t < T; ++t) {
    Tensor xt({B, 1, D});   // position t of every sequence
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < D; ++c) xt.at(b * D + c) = x.at((b * T + t) * D + c);
    mha.append_kv(xt, xt, self);
    AttentionMask causal = AttentionMask::causal_mask();
    causal.query_offset = t;
    const Tensor ys = mha.forward_cached(xt, self, causal), yc = mha.forward_cached(xt, cross, {});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < D; ++c) {
        CHECK(ys.at(b * D + c) == Approx(self_full.at((b * T + t) * D + c)).margin(1e-5));
        CHECK(yc.at(b * D + c) == Approx(cross_full.at((b * T + t) * D + c)).margin(1e-5));
      }
  }
  Tensor one({B, 1, D});
  REQUIRE_THROWS_WITH(mha.append_kv(one, one, self),
                      Catch::Contains("KV cache holds 5 of 5 positions, no room for 1 more"));
}

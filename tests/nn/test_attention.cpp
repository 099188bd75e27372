#include "attn/nn/attention.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace attn;
using nn::ScoreKind;
using ops::AttentionMask;

namespace {

const ScoreKind kAllScores[] = {ScoreKind::dot, ScoreKind::scaled_dot, ScoreKind::general,
                                ScoreKind::concat, ScoreKind::location};

// B = 2, S = 5; dot scores need Dq == Dk.
nn::AttentionConfig config_for(ScoreKind kind) {
  nn::AttentionConfig c;
  c.score = kind;
  c.key_dim = 3;
  c.query_dim = kind == ScoreKind::dot || kind == ScoreKind::scaled_dot ? 3 : 4;
  c.hidden_dim = 4;
  c.max_len = 6;
  return c;
}

struct MaskCase {
  std::string name;
  AttentionMask mask;
};

std::vector<MaskCase> mask_cases() {
  return {{"none", AttentionMask::none()},
          {"padding", AttentionMask::padding(Tensor::from_ints({2}, {3, 5}))},
          {"causal", AttentionMask::causal_mask()},
          {"window", AttentionMask::window_mask(1)}};
}

const int64_t kPositions[] = {1, 3};   // two decoder steps over the same memory

}  // namespace

TEST_CASE("nn::Attention: dot-score forward by hand", "[unit][attention]") {
  // Scores ln3 and 0 give weights 3/4, 1/4 and the context 3/4 * 4 + 1/4 * 8 = 5.
  Rng rng(1);
  nn::Attention attn({ScoreKind::dot, 1, 1, 0, 0}, "attn", rng);
  const Tensor keys = Tensor::from({1, 2, 1}, {1.0f, 0.0f}), values = Tensor::from({1, 2, 1}, {4.0f, 8.0f});
  const nn::AttentionMemory mem = attn.prepare(keys, values);
  const nn::AttentionStep step = attn.forward(Tensor::from({1, 1}, {std::log(3.0f)}), mem, 0, nullptr);
  CHECK_THAT(step.weights, test::close_to(Tensor::from({1, 2}, {0.75f, 0.25f}), 1e-6));
  CHECK_THAT(step.context, test::close_to(Tensor::from({1, 1}, {5.0f}), 1e-6));
  CHECK(attn.params().empty());
}

TEST_CASE("nn::Attention: general and location scores by hand", "[unit][attention]") {
  Rng rng(1);
  nn::Attention general({ScoreKind::general, 2, 2, 0, 0}, "attn", rng);
  general.W.value = Tensor::from({2, 2}, {0, 1, 2, 0});   // q^T W k = q0 k1 + 2 q1 k0
  const Tensor keys = Tensor::from({1, 2, 2}, {1, 2, 3, 4});
  const Tensor q = Tensor::from({1, 2}, {1, 1});
  CHECK_THAT(general.scores(q, general.prepare(keys, keys)),
             test::close_to(Tensor::from({1, 2}, {4, 10}), 1e-6));
  nn::Attention location({ScoreKind::location, 2, 2, 0, 3}, "attn", rng);
  location.W.value = Tensor::from({3, 2}, {1, 0, 0, 1, 1, 1});   // e_j = (W q)_j for j < S = 2
  CHECK_THAT(location.scores(Tensor::from({1, 2}, {2, 5}), location.prepare(keys, keys)),
             test::close_to(Tensor::from({1, 2}, {2, 5}), 1e-6));
  CHECK(location.params().size() == 1);
  CHECK(location.W.name == "attn/W");
}

TEST_CASE("nn::Attention: weights sum to 1 with exact zeros on masked keys", "[unit][attention]") {
  Rng rng(3);
  for (ScoreKind kind : kAllScores) {
    const nn::AttentionConfig c = config_for(kind);
    nn::Attention attn(c, "attn", rng);
    const Tensor keys = randn({2, 5, 3}, rng), values = randn({2, 5, 2}, rng);
    for (const MaskCase& mc : mask_cases()) {
      INFO(nn::score_kind_name(kind) << ", mask " << mc.name);
      const nn::AttentionMemory mem = attn.prepare(keys, values, mc.mask);
      const int64_t pos = 3;
      const Tensor w = attn.forward(randn({2, c.query_dim}, rng), mem, pos, nullptr).weights;
      for (int64_t b = 0; b < 2; ++b) {
        double sum = 0;
        for (int64_t j = 0; j < 5; ++j) {
          bool vis = true;
          if (mc.name == "padding") vis = j < (b == 0 ? 3 : 5);
          if (mc.name == "causal") vis = j <= pos;
          if (mc.name == "window") vis = std::abs(j - pos) <= 1;
          const float x = w.at(b * 5 + j);
          if (vis)
            CHECK(x > 0.0f);
          else
            CHECK(x == 0.0f);
          sum += x;
        }
        CHECK(sum == Approx(1.0).margin(1e-6));
      }
    }
  }
}

TEST_CASE("nn::Attention backward matches finite differences for every score and mask",
          "[gradcheck][attention]") {
  Rng rng(17);
  for (ScoreKind kind : kAllScores)
    for (const MaskCase& mc : mask_cases()) {
      INFO(nn::score_kind_name(kind) << ", mask " << mc.name);
      const nn::AttentionConfig c = config_for(kind);
      nn::Attention attn(c, "attn", rng);
      Tensor keys = randn({2, 5, 3}, rng), values = randn({2, 5, 2}, rng);
      Tensor q[2] = {randn({2, c.query_dim}, rng), randn({2, c.query_dim}, rng)};
      const Tensor rc[2] = {randn({2, 2}, rng), randn({2, 2}, rng)};   // loss weights on contexts
      const Tensor rw[2] = {randn({2, 5}, rng), randn({2, 5}, rng)};   // ...and on the weights
      auto loss = [&] {
        const nn::AttentionMemory mem = attn.prepare(keys, values, mc.mask);
        double total = 0;
        for (int s = 0; s < 2; ++s) {
          const nn::AttentionStep st = attn.forward(q[s], mem, kPositions[s], nullptr);
          total += test::dot(rc[s], st.context) + test::dot(rw[s], st.weights);
        }
        return total;
      };
      const nn::AttentionMemory mem = attn.prepare(keys, values, mc.mask);
      nn::AttentionStepCache cache[2];
      for (int s = 0; s < 2; ++s) attn.forward(q[s], mem, kPositions[s], &cache[s]);
      zero_grads(attn.params());
      nn::AttentionMemoryGrad g = attn.begin_backward(mem);
      Tensor dq[2];
      for (int s = 1; s >= 0; --s) dq[s] = attn.backward(rc[s], cache[s], mem, g, rw[s]);
      attn.backward_memory(mem, g);
      for (int s = 0; s < 2; ++s) CHECK_THAT(dq[s], test::close_to(test::numeric_grad(loss, q[s]), 1e-2));
      CHECK_THAT(g.dkeys, test::close_to(test::numeric_grad(loss, keys), 1e-2));
      CHECK_THAT(g.dvalues, test::close_to(test::numeric_grad(loss, values), 1e-2));
      for (Param* p : attn.params()) {
        INFO("param " << p->name);
        CHECK_THAT(p->grad, test::close_to(test::numeric_grad(loss, p->value), 1e-2));
      }
    }
}

TEST_CASE("nn::Attention: values that are the keys get one summed gradient", "[gradcheck][attention]") {
  Rng rng(19);
  nn::Attention attn(config_for(ScoreKind::concat), "attn", rng);
  Tensor h = randn({2, 5, 3}, rng), q = randn({2, 4}, rng);
  const Tensor r = randn({2, 3}, rng);
  const AttentionMask mask = AttentionMask::padding(Tensor::from_ints({2}, {4, 2}));
  auto loss = [&] { return test::dot(r, attn.forward(q, attn.prepare(h, h, mask), 0, nullptr).context); };
  const nn::AttentionMemory mem = attn.prepare(h, h, mask);
  nn::AttentionStepCache cache;
  attn.forward(q, mem, 0, &cache);
  nn::AttentionMemoryGrad g = attn.begin_backward(mem);
  attn.backward(r, cache, mem, g);
  attn.backward_memory(mem, g);
  CHECK(g.dvalues.empty());
  CHECK_THAT(g.dkeys, test::close_to(test::numeric_grad(loss, h), 1e-2));
}

TEST_CASE("nn::Attention: bad configurations and inputs are reported", "[unit][attention]") {
  Rng rng(2);
  REQUIRE_THROWS_WITH(nn::Attention({ScoreKind::dot, 4, 3, 0, 0}, "attn", rng),
                      Catch::Contains("query_dim 4 must equal key_dim 3"));
  REQUIRE_THROWS_WITH(nn::Attention({ScoreKind::concat, 4, 3, 0, 0}, "attn", rng),
                      Catch::Contains("hidden_dim must be >= 1, got 0"));
  REQUIRE_THROWS_WITH(nn::parse_score_kind("bilinear"),
                      Catch::Contains("unknown attention score 'bilinear'"));
  CHECK(nn::parse_score_kind("concat") == ScoreKind::concat);
  nn::Attention attn(config_for(ScoreKind::location), "attn", rng);
  REQUIRE_THROWS_WITH(attn.prepare(Tensor({2, 7, 3}), Tensor({2, 7, 2})),
                      Catch::Contains("source length S = 7 exceeds max_len = 6"));
  REQUIRE_THROWS_WITH(
      attn.prepare(Tensor({2, 5, 3}), Tensor({2, 4, 2})),
      Catch::Contains("attention: values [B, S, Dv] has shape [2, 4, 2], expected [2, 5, *]"));
  const nn::AttentionMemory mem = attn.prepare(Tensor({2, 5, 3}), Tensor({2, 5, 2}));
  REQUIRE_THROWS_WITH(attn.forward(Tensor({3, 4}), mem, 0, nullptr),
                      Catch::Contains("attention: query [B, Dq] has shape [3, 4], expected [2, 4]"));
}

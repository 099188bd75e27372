// models::Seq2Seq: configuration, gradient checks of whole tiny models for every attention
// variant, style, cell and encoder form, alignment properties, beam/greedy agreement, and an
// integration test that attention learns `reverse` clearly better than the baseline.
#include "attn/models/seq2seq.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/optim/adam.hpp"
#include "attn/optim/clip.hpp"
#include "test_support.hpp"

using namespace attn;
using models::AttentionStyle;
using models::LocalAttention;
using models::RnnCell;
using models::Seq2SeqScore;

namespace {

models::Seq2SeqConfig tiny_config(Seq2SeqScore score, LocalAttention local, AttentionStyle style, RnnCell cell,
                                  bool bidirectional, bool self_attention) {
  models::Seq2SeqConfig c;
  c.src_vocab = 7;
  c.tgt_vocab = 6;
  c.embed_dim = 3;
  c.cell = cell;
  c.enc_hidden = 2;
  c.enc_layers = 2;
  c.bidirectional = bidirectional;
  c.encoder_self_attention = self_attention;
  c.dec_hidden = c.memory_dim();   // dot scores need the widths equal
  if (score != Seq2SeqScore::dot && score != Seq2SeqScore::scaled_dot) c.dec_hidden = 3;
  c.attention = score;
  c.style = style;
  c.attention_dim = 3;
  c.local = local;
  c.window = 1;
  c.max_src_len = 6;
  return c;
}

// B = 2, S = 5 (lengths 5, 3), T = 4 (lengths 4, 2).
models::TokenBatch tiny_batch() {
  models::TokenBatch b;
  b.src = Tensor::from_ints({2, 5}, {4, 5, 6, 4, 5, 6, 5, 4, 0, 0});
  b.src_len = Tensor::from_ints({2}, {5, 3});
  b.tgt = Tensor::from_ints({2, 4}, {5, 4, 3, 2, 4, 2, 0, 0});
  b.tgt_len = Tensor::from_ints({2}, {4, 2});
  return b;
}

std::string describe(const models::Seq2SeqConfig& c) {
  return std::string(models::seq2seq_score_name(c.attention)) + "/" + models::local_attention_name(c.local) + "/" +
         models::attention_style_name(c.style) + "/" + models::rnn_cell_name(c.cell) +
         (c.bidirectional ? "/bi" : "/uni") + (c.encoder_self_attention ? "/self-attn" : "");
}

// Central differences of the mean loss on up to `samples` entries of every parameter,
// against train_step's gradient.
void check_model_gradients(const models::Seq2SeqConfig& config, uint64_t seed) {
  INFO("model " << describe(config));
  Rng init(seed);
  models::Seq2Seq model(config, init);
  // Move parameters away from zero (biases start at 0) so no entry sits at a special point.
  Rng jitter(seed + 1);
  for (Param* p : model.params())
    for (float& v : p->value.values()) v += jitter.uniform(-0.3f, 0.3f);
  const models::TokenBatch batch = tiny_batch();
  ParamList params = model.params();
  zero_grads(params);
  Rng dropout(3);
  const models::LossStats stats = model.train_step(batch, dropout);
  REQUIRE(stats.tokens == 6);
  auto loss = [&] {
    const models::LossStats s = model.evaluate(batch);
    return s.loss_sum / static_cast<double>(s.tokens);
  };
  CHECK(std::abs(loss() - stats.loss_sum / 6.0) < 1e-6);
  Rng pick(seed + 2);
  for (Param* p : params) {
    INFO("param " << p->name);
    const int64_t n = p->value.numel();
    const int64_t samples = std::min<int64_t>(n, 6);
    for (int64_t s = 0; s < samples; ++s) {
      const int64_t i = samples == n ? s : pick.uniform_int(n);
      const float saved = p->value.at(i);
      const float eps = 2e-3f;
      p->value.at(i) = saved + eps;
      const double up = loss();
      p->value.at(i) = saved - eps;
      const double down = loss();
      p->value.at(i) = saved;
      const double numeric = (up - down) / (2.0 * static_cast<double>(eps));
      const double analytic = p->grad.at(i);
      INFO("entry " << i << ": analytic " << analytic << ", numeric " << numeric);
      CHECK(std::abs(analytic - numeric) <= 2e-3 + 2e-2 * std::abs(numeric));
    }
  }
}

void check_all_forms(Seq2SeqScore score, LocalAttention local, uint64_t seed) {
  for (AttentionStyle style : {AttentionStyle::bahdanau, AttentionStyle::luong})
    for (RnnCell cell : {RnnCell::gru, RnnCell::lstm})
      for (bool bidirectional : {false, true})
        for (bool self_attention : {false, true})
          check_model_gradients(tiny_config(score, local, style, cell, bidirectional, self_attention), seed++);
}

}  // namespace

TEST_CASE("seq2seq config: validation and attributes", "[unit][seq2seq]") {
  models::Seq2SeqConfig c = tiny_config(Seq2SeqScore::concat, LocalAttention::local_p, AttentionStyle::luong,
                                        RnnCell::lstm, true, true);
  c.dropout = 0.25f;
  c.teacher_forcing = 0.5f;
  const models::Seq2SeqConfig back = models::Seq2SeqConfig::from_attrs(c.to_attrs());
  CHECK(back.to_attrs() == c.to_attrs());
  CHECK(back.cell == RnnCell::lstm);
  CHECK(back.local == LocalAttention::local_p);
  CHECK(back.dropout == 0.25f);
  CHECK(models::parse_seq2seq_score("scaled-dot") == Seq2SeqScore::scaled_dot);
  CHECK(models::parse_seq2seq_score("additive") == Seq2SeqScore::concat);
  REQUIRE_THROWS_WITH(models::parse_seq2seq_score("cosine"), Catch::Contains("unknown attention 'cosine'"));

  models::Seq2SeqConfig bad = c;
  bad.attention = Seq2SeqScore::dot;
  bad.dec_hidden = 3;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("dot attention needs dec_hidden (3) == the memory width 4"));
  bad = c;
  bad.window = 0;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("window must be >= 1 for local attention, got 0"));
  bad = c;
  bad.teacher_forcing = 1.5f;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("teacher_forcing must be in [0, 1], got 1.5"));
  auto attrs = c.to_attrs();
  attrs["cell"] = int64_t{3};
  REQUIRE_THROWS_WITH(models::Seq2SeqConfig::from_attrs(attrs), Catch::Contains("attribute 'cell' must be a string"));
}

TEST_CASE("seq2seq: parameters are named by module path", "[unit][seq2seq]") {
  Rng rng(1);
  models::Seq2Seq model(tiny_config(Seq2SeqScore::concat, LocalAttention::local_p, AttentionStyle::luong,
                                    RnnCell::gru, true, true),
                        rng);
  std::vector<std::string> names;
  for (Param* p : model.params()) names.push_back(p->name);
  for (const char* want : {"encoder/embedding/table", "encoder/layer0/fwd/W_ih", "encoder/layer1/bwd/b_hh",
                           "encoder/layer0/bwd/self_attn/W", "bridge/W", "decoder/embedding/table",
                           "decoder/rnn/W_hh", "decoder/attention/U", "decoder/local_p/v", "decoder/combine/W",
                           "output/W", "output/b"})
    CHECK(std::count(names.begin(), names.end(), want) == 1);
}

TEST_CASE("seq2seq: bad inputs are rejected with the reason", "[unit][seq2seq]") {
  Rng rng(1);
  models::Seq2Seq model(tiny_config(Seq2SeqScore::general, LocalAttention::global, AttentionStyle::bahdanau,
                                    RnnCell::gru, true, false),
                        rng);
  models::TokenBatch b = tiny_batch();
  b.src_len = Tensor::from_ints({2}, {5, 0});
  REQUIRE_THROWS_WITH(model.evaluate(b), Catch::Contains("src_len[1] = 0 is outside [1, S = 5]"));
  b = tiny_batch();
  b.tgt = Tensor::from_ints({2, 4}, {5, 4, 3, 2, 4, 9, 0, 0});
  REQUIRE_THROWS_WITH(model.evaluate(b), Catch::Contains("embedding: id 9"));
  b = tiny_batch();
  b.tgt = Tensor::from_ints({1, 4}, {5, 4, 3, 2});
  REQUIRE_THROWS_WITH(model.evaluate(b), Catch::Contains("seq2seq: tgt [B, T] has shape [1, 4], expected [2, *]"));
  Rng rng2(2);
  models::Seq2SeqConfig c = tiny_config(Seq2SeqScore::location, LocalAttention::global, AttentionStyle::luong,
                                        RnnCell::gru, false, false);
  c.max_src_len = 4;
  models::Seq2Seq loc(c, rng2);
  REQUIRE_THROWS_WITH(loc.evaluate(tiny_batch()), Catch::Contains("source length S = 5 exceeds max_src_len = 4"));
}

TEST_CASE("seq2seq gradients: no attention (Cho/Sutskever baseline)", "[gradcheck][seq2seq]") {
  check_all_forms(Seq2SeqScore::none, LocalAttention::global, 100);
}
TEST_CASE("seq2seq gradients: dot attention", "[gradcheck][seq2seq]") {
  check_all_forms(Seq2SeqScore::dot, LocalAttention::global, 200);
}
TEST_CASE("seq2seq gradients: general attention", "[gradcheck][seq2seq]") {
  check_all_forms(Seq2SeqScore::general, LocalAttention::global, 300);
}
TEST_CASE("seq2seq gradients: concat (additive) attention", "[gradcheck][seq2seq]") {
  check_all_forms(Seq2SeqScore::concat, LocalAttention::global, 400);
}
TEST_CASE("seq2seq gradients: scaled-dot attention", "[gradcheck][seq2seq]") {
  check_all_forms(Seq2SeqScore::scaled_dot, LocalAttention::global, 500);
}
TEST_CASE("seq2seq gradients: location attention", "[gradcheck][seq2seq]") {
  check_all_forms(Seq2SeqScore::location, LocalAttention::global, 600);
}
TEST_CASE("seq2seq gradients: local-m attention", "[gradcheck][seq2seq]") {
  check_all_forms(Seq2SeqScore::general, LocalAttention::local_m, 700);
}
TEST_CASE("seq2seq gradients: local-p attention, through the predicted position", "[gradcheck][seq2seq]") {
  check_all_forms(Seq2SeqScore::concat, LocalAttention::local_p, 800);
}

// caption::Captioner: configuration, gradient checks of whole tiny captioners (soft attention
// with and without the gate and the doubly stochastic term, and the mean-annotation ablation),
// attention rows, step-by-step decoding against the teacher-forced pass, and an integration test
// in which attention learns to read a bar's position off an image.
#include "attn/families/caption/model.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/optim/adam.hpp"
#include "test_support.hpp"

using namespace attn;
using caption::CaptionAttention;

namespace {

caption::CaptionerConfig tiny_config(CaptionAttention attention, bool gate, float alpha_c, bool batch_norm = false,
                                     bool coords = false) {
  caption::CaptionerConfig c;
  c.batch_norm = batch_norm;
  c.coords = coords;
  c.vocab = 7;
  c.channels = 2;
  c.height = 6;
  c.width = 8;
  c.encoder = "conv3x3,pool2,conv3x1";   // D = 3 over a 3 x 4 grid: L = 12
  c.embed_dim = 3;
  c.hidden = 4;
  c.attention_dim = 3;
  c.attention = attention;
  c.gate = gate;
  c.alpha_c = alpha_c;
  return c;
}

// B = 2 images, T = 4 (caption lengths 4 and 2, EOS = 2 counted).
caption::CaptionBatch tiny_batch(const caption::CaptionerConfig& c) {
  Rng rng(7);
  caption::CaptionBatch b;
  b.images = rand_uniform({2, c.channels, c.height, c.width}, rng, 0.0f, 1.0f);
  b.tgt = Tensor::from_ints({2, 4}, {5, 4, 6, 2, 6, 2, 0, 0});
  b.tgt_len = Tensor::from_ints({2}, {4, 2});
  return b;
}

std::string describe(const caption::CaptionerConfig& c) {
  return std::string(caption::caption_attention_name(c.attention)) + (c.gate ? "/gate" : "/no-gate") +
         "/alpha_c=" + std::to_string(c.alpha_c) + "/alpha_entropy=" + std::to_string(c.alpha_entropy) +
         (c.batch_norm ? "/batch-norm" : "") + (c.coords ? "/coords" : "");
}

// Central differences of the mean loss on up to 6 entries of every parameter, against
// train_step's gradient.
void check_model_gradients(const caption::CaptionerConfig& config, uint64_t seed) {
  INFO("captioner " << describe(config));
  Rng init(seed);
  caption::Captioner model(config, init);
  Rng jitter(seed + 1);   // away from zero biases, so no entry sits at a special point
  for (Param* p : model.params())
    for (float& v : p->value.values()) v += jitter.uniform(-0.3f, 0.3f);
  const caption::CaptionBatch batch = tiny_batch(config);
  ParamList params = model.params();
  zero_grads(params);
  Rng dropout(3);
  const caption::CaptionStats stats = model.train_step(batch, dropout);
  REQUIRE(stats.tokens == 6);
  REQUIRE(stats.sequences == 2);
  if (config.attention == CaptionAttention::soft) REQUIRE(stats.penalty_sum > 0);
  // The training objective (batch normalisation by the batch's statistics), unchanged by the step.
  auto loss = [&] {
    Rng unused(0);
    const caption::CaptionStats s = model.training_loss(batch, unused);
    return s.loss_sum / static_cast<double>(s.tokens);
  };
  CHECK(std::abs(loss() - stats.loss_sum / 6.0) < 1e-6);
  if (!config.batch_norm) CHECK(std::abs(model.evaluate(batch).loss_sum - stats.loss_sum) < 1e-5);
  Rng pick(seed + 2);
  test::check_sampled_grads(params, loss, pick);
}

}  // namespace

TEST_CASE("captioner config: encoder list, validation and attributes", "[unit][captioner]") {
  using caption::ConvEncoderLayer;
  CHECK(caption::parse_encoder("conv32x3,pool2,conv64x5") ==
        std::vector<ConvEncoderLayer>{
            {ConvEncoderLayer::conv, 32, 3}, {ConvEncoderLayer::pool, 0, 2}, {ConvEncoderLayer::conv, 64, 5}});
  for (const char* bad : {"", "conv32", "convx3", "pool", "pool0", "conv32x3,,pool2", "relu", "conv32x3 "})
    REQUIRE_THROWS_WITH(caption::parse_encoder(bad), Catch::Contains("is not convKxS"));

  caption::CaptionerConfig c = tiny_config(CaptionAttention::soft, true, 0.5f);
  const caption::CaptionerConfig::Grid g = c.grid();
  CHECK((g.D == 3 && g.h == 3 && g.w == 4));
  caption::CaptionerConfig with_xy = c;
  with_xy.coords = true;
  CHECK(with_xy.grid().D == 5);   // the annotation ends with the location's (x, y)
  c.dropout = 0.25f;
  const caption::CaptionerConfig back = caption::CaptionerConfig::from_attrs(c.to_attrs());
  CHECK(back.to_attrs() == c.to_attrs());
  CHECK(back.encoder == "conv3x3,pool2,conv3x1");
  CHECK(std::get<std::string>(c.to_attrs().at("attention")) == "soft");

  caption::CaptionerConfig bad = c;
  bad.encoder = "pool4,pool4";
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("leaves no location of a 6 x 8 image"));
  bad = c;
  bad.attention = CaptionAttention::mean;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("the gate needs soft attention"));
  bad = c;
  bad.vocab = 4;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("vocab must be in [5, 2147483647], got 4"));
  auto attrs = c.to_attrs();
  // A model written before alpha_entropy existed loads without it, as 0 (what it trained with).
  attrs.erase("alpha_entropy");
  CHECK(caption::CaptionerConfig::from_attrs(attrs, "m.h5").alpha_entropy == 0.0f);
  attrs["alpha_entropy"] = -0.5;
  REQUIRE_THROWS_WITH(caption::CaptionerConfig::from_attrs(attrs, "m.h5"),
                      Catch::Contains("alpha_entropy must be >= 0"));
  attrs = c.to_attrs();
  attrs["alpha_c"] = -1.0;
  REQUIRE_THROWS_WITH(caption::CaptionerConfig::from_attrs(attrs, "m.h5"), Catch::Contains("m.h5: /config"));
  REQUIRE_THROWS_WITH(caption::parse_caption_attention("hard"), Catch::Contains("unknown caption attention 'hard'"));
}

TEST_CASE("captioner: parameters are named by module path", "[unit][captioner]") {
  Rng rng(1);
  caption::Captioner model(tiny_config(CaptionAttention::soft, true, 1.0f), rng);
  std::vector<std::string> names;
  for (Param* p : model.params()) names.push_back(p->name);
  for (const char* want : {"encoder/conv0/W", "encoder/conv1/b", "init_h/W", "init_c/b", "embedding/table",
                           "decoder/rnn/W_ih", "decoder/rnn/W_hh", "decoder/attention/U", "decoder/gate/W", "deep/W",
                           "output/b"})
    CHECK(std::count(names.begin(), names.end(), want) == 1);
  Rng rng2(1);
  caption::Captioner mean(tiny_config(CaptionAttention::mean, false, 0.0f), rng2);
  for (Param* p : mean.params()) CHECK(p->name.rfind("decoder/attention", 0) == std::string::npos);
}

TEST_CASE("captioner gradients: soft attention with the gate and the doubly stochastic penalty",
          "[gradcheck][captioner]") {
  check_model_gradients(tiny_config(CaptionAttention::soft, true, 1.0f), 10);
}
TEST_CASE("captioner gradients: soft attention without the gate", "[gradcheck][captioner]") {
  check_model_gradients(tiny_config(CaptionAttention::soft, false, 1.0f), 20);
}
TEST_CASE("captioner gradients: soft attention without the penalty", "[gradcheck][captioner]") {
  check_model_gradients(tiny_config(CaptionAttention::soft, true, 0.0f), 30);
}
TEST_CASE("captioner gradients: the attention-entropy penalty, with and without the doubly stochastic one",
          "[gradcheck][captioner]") {
  for (const float alpha_c : {0.0f, 1.0f}) {
    caption::CaptionerConfig c = tiny_config(CaptionAttention::soft, true, alpha_c);
    c.alpha_entropy = 0.5f;
    check_model_gradients(c, 35);
  }
}
TEST_CASE("captioner gradients: the mean-annotation ablation", "[gradcheck][captioner]") {
  check_model_gradients(tiny_config(CaptionAttention::mean, false, 0.0f), 40);
}
TEST_CASE("captioner gradients: batch normalisation in the encoder", "[gradcheck][captioner]") {
  check_model_gradients(tiny_config(CaptionAttention::soft, true, 1.0f, /*batch_norm=*/true), 50);
}

TEST_CASE("captioner gradients: annotations with the locations' coordinates", "[gradcheck][captioner]") {
  check_model_gradients(tiny_config(CaptionAttention::soft, true, 1.0f, false, /*coords=*/true), 60);
  check_model_gradients(tiny_config(CaptionAttention::mean, false, 0.0f, false, /*coords=*/true), 70);
}

TEST_CASE("captioner: with coords, equal contents at two places are told apart by attention",
          "[unit][captioner]") {
  // A blank image: every location's encoder features are equal, so without coordinates the
  // attention scores are equal and the weights uniform; with them, they differ.
  for (bool coords : {false, true}) {
    caption::CaptionerConfig c = tiny_config(CaptionAttention::soft, true, 1.0f, false, coords);
    Rng rng(3);
    caption::Captioner model(c, rng);
    caption::CaptionBatch batch = tiny_batch(c);
    batch.images = Tensor({2, c.channels, c.height, c.width});
    Tensor alpha;
    (void)model.evaluate(batch, &alpha);
    float lo = 1, hi = 0;
    for (int64_t i = 0; i < 12; ++i) {
      lo = std::min(lo, alpha.at(i));
      hi = std::max(hi, alpha.at(i));
    }
    INFO("coords " << coords << ": weights in [" << lo << ", " << hi << "]");
    if (coords) CHECK(hi - lo > 1e-3f);
    else CHECK(hi - lo < 1e-6f);
  }
}

TEST_CASE("captioner: batch normalisation trains on batch statistics, evaluates on running ones",
          "[unit][captioner]") {
  const caption::CaptionerConfig c = tiny_config(CaptionAttention::soft, true, 1.0f, /*batch_norm=*/true);
  Rng rng(8);
  caption::Captioner model(c, rng);
  std::vector<std::string> names;
  for (Param* p : model.params()) names.push_back(p->name);
  CHECK(std::count(names.begin(), names.end(), "encoder/bn0/gamma") == 1);
  CHECK(std::count(names.begin(), names.end(), "encoder/conv0/b") == 0);   // the bias is beta's
  const auto buffers = model.buffers();
  REQUIRE(buffers.size() == 4);
  CHECK(buffers[0].first == "encoder/bn0/running_mean");
  const Tensor before = buffers[0].second->clone();
  const caption::CaptionBatch batch = tiny_batch(c);
  const caption::CaptionStats eval0 = model.evaluate(batch);
  Rng unused(0);
  const caption::CaptionStats train0 = model.training_loss(batch, unused);
  CHECK(eval0.loss_sum != Approx(train0.loss_sum));   // running (0, 1) versus the batch's statistics
  CHECK_THAT(*buffers[0].second, test::close_to(before, 0));   // neither moved them
  ParamList params = model.params();
  zero_grads(params);
  (void)model.train_step(batch, unused);
  double moved = 0;
  for (int64_t i = 0; i < before.numel(); ++i) moved += std::abs(buffers[0].second->at(i) - before.at(i));
  CHECK(moved > 0);   // the step moved them towards the batch's
}

TEST_CASE("captioner: attention rows sum to 1 over the locations, the penalty is their coverage, the entropy theirs",
          "[unit][captioner]") {
  caption::CaptionerConfig c = tiny_config(CaptionAttention::soft, true, 2.0f);
  c.alpha_entropy = 0.25f;
  Rng rng(5);
  caption::Captioner model(c, rng);
  const caption::CaptionBatch batch = tiny_batch(c);
  Tensor alpha;
  const caption::CaptionStats s = model.evaluate(batch, &alpha);
  REQUIRE(alpha.shape() == Shape{2, 4, 12});
  double penalty = 0, entropy = 0;
  for (int64_t b = 0; b < 2; ++b) {
    std::vector<double> coverage(12, 0.0);
    for (int64_t t = 0; t < 4; ++t) {
      double sum = 0;
      for (int64_t i = 0; i < 12; ++i) sum += alpha.at((b * 4 + t) * 12 + i);
      const bool counted = t < batch.tgt_len.idata()[b];
      CHECK(sum == Approx(counted ? 1.0 : 0.0).margin(1e-5));
      for (int64_t i = 0; i < 12; ++i) {
        const double a = alpha.at((b * 4 + t) * 12 + i);
        coverage[i] += a;
        if (counted) entropy -= a * std::log(a);
      }
    }
    for (double v : coverage) penalty += (1 - v) * (1 - v);
  }
  CHECK(s.penalty_sum == Approx(penalty).epsilon(1e-5));
  CHECK(s.entropy_sum == Approx(entropy).epsilon(1e-5));
  CHECK(entropy < 6 * std::log(12.0));   // 6 counted words, none above uniform's log L
  CHECK(s.loss_sum == Approx(s.nll_sum + 2.0 * penalty + 0.25 * entropy).epsilon(1e-6));
}

TEST_CASE("captioner: with the entropy penalty off, loss and gradient are those of a model without it",
          "[unit][captioner]") {
  caption::CaptionerConfig with = tiny_config(CaptionAttention::soft, true, 1.0f);
  with.alpha_entropy = 0.5f;
  caption::CaptionerConfig without = with;
  without.alpha_entropy = 0.0f;
  Rng init_a(8), init_b(8);
  caption::Captioner a(with, init_a), b(without, init_b);
  CHECK(a.entropy_weight() == 0.5f);
  a.set_entropy_penalty(false);
  CHECK(a.entropy_weight() == 0.0f);
  CHECK(a.config().alpha_entropy == 0.5f);   // the config still says what it trained with
  const caption::CaptionBatch batch = tiny_batch(with);
  ParamList pa = a.params(), pb = b.params();
  zero_grads(pa);
  zero_grads(pb);
  Rng ra(9), rb(9);
  const caption::CaptionStats sa = a.train_step(batch, ra), sb = b.train_step(batch, rb);
  CHECK(sa.entropy_sum == 0.0);
  CHECK(sa.loss_sum == sb.loss_sum);
  REQUIRE(pa.size() == pb.size());
  for (size_t k = 0; k < pa.size(); ++k) {
    INFO(pa[k]->name);
    const auto ga = pa[k]->grad.values(), gb = pb[k]->grad.values();
    CHECK(std::equal(ga.begin(), ga.end(), gb.begin(), gb.end()));
  }
  // On again, the penalty is back in the loss.
  a.set_entropy_penalty(true);
  const caption::CaptionStats on = a.evaluate(batch);
  CHECK(on.entropy_sum > 0);
  CHECK(on.loss_sum == Approx(on.nll_sum + on.penalty_sum + 0.5 * on.entropy_sum).epsilon(1e-6));
}

TEST_CASE("captioner: step-by-step decoding gives the teacher-forced logits and weights", "[unit][captioner]") {
  for (const auto& [attention, coords] : {std::pair{CaptionAttention::soft, false}, std::pair{CaptionAttention::mean, false},
                                          std::pair{CaptionAttention::soft, true}}) {
    const caption::CaptionerConfig c = tiny_config(attention, attention == CaptionAttention::soft, 1.0f, false, coords);
    INFO(describe(c));
    Rng rng(6);
    caption::Captioner model(c, rng);
    const caption::CaptionBatch batch = tiny_batch(c);
    Tensor alpha;
    (void)model.evaluate(batch, &alpha);
    // Feed image 0's caption; two copies of each image, as a beam of 2 starts.
    caption::CaptionerDecoderState state = model.start_decoding(batch.images, 2);
    REQUIRE(state.rows() == 4);
    state.select({0, 2});   // one row per image
    Tensor ids = Tensor::from_ints({2}, {data::kBos, data::kBos});
    double nll0 = 0;
    for (int64_t t = 0; t < 4; ++t) {
      Tensor w;
      const Tensor logits = model.decode_step(ids, state, &w);
      REQUIRE(logits.shape() == Shape{2, 7});
      for (int64_t i = 0; i < 12; ++i) CHECK(w.at(i) == Approx(alpha.at(t * 12 + i)).margin(1e-6));
      const int32_t y = batch.tgt.idata()[t];
      double lse = 0, mx = -1e30;
      for (int64_t v = 0; v < 7; ++v) mx = std::max<double>(mx, logits.at(v));
      for (int64_t v = 0; v < 7; ++v) lse += std::exp(logits.at(v) - mx);
      nll0 += mx + std::log(lse) - logits.at(y);
      ids = Tensor::from_ints({2}, {y, batch.tgt.idata()[4 + std::min<int64_t>(t, 1)]});
    }
    // Image 0's words alone: the same model on a batch of that image.
    caption::CaptionBatch one;
    one.images = batch.images.rows(0, 1).clone();
    one.tgt = Tensor::from_ints({1, 4}, {5, 4, 6, 2});
    one.tgt_len = Tensor::from_ints({1}, {4});
    CHECK(model.evaluate(one).nll_sum == Approx(nll0).epsilon(1e-5));
  }
}

namespace {

// A two-object scene: an 8 x 16 image with a 4 x 4 pattern (0: a horizontal bar, 1: a vertical
// bar, 2: a diagonal) in each half at a random place, on noise; the caption names the patterns
// left to right (words 4, 5, 6), then EOS. Returns the batch and each word's half (0 or 1).
caption::CaptionBatch scenes(int64_t n, Rng& rng) {
  caption::CaptionBatch b;
  b.images = Tensor({n, 1, 8, 16});
  b.tgt = Tensor({n, 3}, DType::i32);
  b.tgt_len = Tensor::from_ints({n}, std::vector<int32_t>(static_cast<size_t>(n), 3));
  for (int64_t i = 0; i < n; ++i) {
    float* img = b.images.data() + i * 128;
    for (int64_t p = 0; p < 128; ++p) img[p] = rng.uniform(0.0f, 0.2f);
    for (int64_t half = 0; half < 2; ++half) {
      const int64_t kind = rng.uniform_int(3), y0 = rng.uniform_int(5), x0 = half * 8 + rng.uniform_int(5);
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t y = kind == 0 ? y0 + 1 : y0 + k, x = kind == 1 ? x0 + 1 : x0 + k;
        img[y * 16 + x] = 1.0f;
        if (kind != 2) img[(kind == 0 ? y + 1 : y) * 16 + (kind == 1 ? x + 1 : x)] = 1.0f;
      }
      b.tgt.idata()[i * 3 + half] = static_cast<int32_t>(4 + kind);
    }
    b.tgt.idata()[i * 3 + 2] = data::kEos;
  }
  return b;
}

}  // namespace

TEST_CASE("captioner: soft attention learns to name two patterns left to right, looking at each",
          "[integration][captioner]") {
  caption::CaptionerConfig c;
  c.vocab = 7;
  c.height = 8;
  c.width = 16;
  c.encoder = "conv8x3,pool2,conv16x3";   // a 4 x 8 grid: each half is 4 x 4 locations
  c.embed_dim = 16;
  c.hidden = 32;
  c.attention_dim = 16;
  Rng init(1), data_rng(2), dropout(3);
  caption::Captioner model(c, init);
  optim::AdamConfig adam;
  adam.lr = 3e-3;
  optim::Adam opt(adam);
  const ParamList params = model.params();
  for (int64_t step = 1; step <= 3000; ++step) {
    zero_grads(params);
    (void)model.train_step(scenes(16, data_rng), dropout);
    opt.step(params, step);
  }
  Rng test_rng(99);
  const caption::CaptionBatch test = scenes(200, test_rng);
  Tensor alpha;
  const caption::CaptionStats s = model.evaluate(test, &alpha);
  const double accuracy = static_cast<double>(s.sequences_correct) / static_cast<double>(s.sequences);
  INFO("sequence accuracy " << accuracy);
  CHECK(accuracy >= 0.95);
  // Word t's attention peak lies in half t: the grid's columns 0-3 or 4-7 (a column at the middle
  // sees both halves, so a few peaks there fall on the wrong side; chance is 200).
  int64_t inside = 0;
  for (int64_t i = 0; i < 200; ++i)
    for (int64_t t = 0; t < 2; ++t) {
      const float* a = alpha.data() + (i * 3 + t) * 32;
      const int64_t peak = std::max_element(a, a + 32) - a;
      inside += (peak % 8) / 4 == t;
    }
  INFO("peaks in the named pattern's half: " << inside << " of 400");
  CHECK(inside >= 340);
}

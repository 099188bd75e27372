// Tests of transformer::Transformer: configuration, whole-model gradient checks for each
// architecture, causality of the decoder, BERT masking statistics, and a decoder-only LM
// learning a deterministic sequence.
#include "attn/families/transformer/model.hpp"

#include <cmath>
#include <set>

#include "attn/families/transformer/decode.hpp"
#include "attn/families/transformer/run.hpp"
#include "attn/optim/adam.hpp"
#include "test_support.hpp"

using namespace attn;
using data::TokenBatch;
using transformer::Transformer;
using transformer::TransformerArch;
using transformer::TransformerConfig;

namespace {

TransformerConfig tiny_config(TransformerArch arch) {
  TransformerConfig c;
  c.arch = arch;
  c.src_vocab = 11;
  c.tgt_vocab = 10;
  c.d_model = 8;
  c.heads = 2;
  c.d_ff = 16;
  c.enc_layers = 1;
  c.dec_layers = 1;
  c.dropout = 0.0f;
  c.max_len = 16;
  c.label_smoothing = 0.1f;
  return c;
}

// Random regular tokens in [4, vocab) up to each length, PAD after; tgt rows end with EOS.
Tensor random_tokens(int64_t B, int64_t L, const std::vector<int32_t>& len, int64_t vocab, Rng& rng, bool eos) {
  Tensor t({B, L}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < len[static_cast<size_t>(b)]; ++i)
      t.idata()[b * L + i] = static_cast<int32_t>(4 + rng.uniform_int(vocab - 4));
  if (eos)
    for (int64_t b = 0; b < B; ++b) t.idata()[b * L + len[static_cast<size_t>(b)] - 1] = data::kEos;
  return t;
}

TokenBatch tiny_batch(const TransformerConfig& c, Rng& rng) {
  TokenBatch batch;
  const std::vector<int32_t> src_len{5, 3}, tgt_len{4, 2};
  batch.src = random_tokens(2, 5, src_len, c.src_vocab, rng, false);
  batch.src_len = Tensor::from_ints({2}, src_len);
  batch.tgt = random_tokens(2, 4, tgt_len, c.tgt_vocab, rng, true);
  batch.tgt_len = Tensor::from_ints({2}, tgt_len);
  if (c.arch == TransformerArch::mlm) {
    batch.src = random_tokens(2, 5, src_len, c.tgt_vocab, rng, false);
    batch.tgt = Tensor({2, 5}, DType::i32);   // predict positions 0, 2 of row 0 and 1 of row 1
    for (int64_t i : {0, 2, 6}) batch.tgt.idata()[i] = batch.src.idata()[i];
    batch.src.idata()[0] = static_cast<int32_t>(c.tgt_vocab);   // [MASK]
    batch.src.idata()[6] = static_cast<int32_t>(c.tgt_vocab);
    batch.tgt_len = batch.src_len;
    batch.segments = Tensor::from_ints({2, 5}, {0, 0, 1, 1, 1, 0, 1, 1, 0, 0});
  }
  return batch;
}

// The analytic gradient of the mean loss against central differences of evaluate(), for up
// to `samples` entries of every parameter tensor.
void check_model_gradient(const TransformerConfig& config, uint64_t seed) {
  Rng rng(seed);
  Transformer model(config, rng);
  const TokenBatch batch = tiny_batch(config, rng);
  ParamList params = model.params();
  zero_grads(params);
  Rng dropout_rng(1);
  const data::LossStats stats = model.train_step(batch, dropout_rng);
  REQUIRE(stats.tokens > 0);
  const data::LossStats eval = model.evaluate(batch);
  CHECK(eval.loss_sum == Approx(stats.loss_sum).epsilon(1e-5));
  auto loss = [&] {
    const data::LossStats s = model.evaluate(batch);
    return s.loss_sum / static_cast<double>(s.tokens);
  };
  Rng pick(seed + 100);
  test::check_sampled_grads(params, loss, pick, {.samples = 6, .eps = 3e-3, .abs_tol = 1e-4, .rel_tol = 1e-2});
}

}  // namespace

TEST_CASE("Transformer config: validation names the field, attributes round-trip", "[unit][transformer]") {
  TransformerConfig c = tiny_config(TransformerArch::encdec);
  c.validate();
  c.pos_encoding = transformer::PositionalKind::learned;
  c.norm = nn::NormPosition::pre;
  c.attn_window = 3;
  const TransformerConfig back = TransformerConfig::from_attrs(c.to_attrs());
  CHECK(back.to_attrs() == c.to_attrs());
  CHECK(back.norm == nn::NormPosition::pre);

  TransformerConfig bad = c;
  bad.heads = 3;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("d_model must be a multiple of heads 3, got 8"));
  bad = c;
  bad.dropout = 1.0f;
  REQUIRE_THROWS_AS(bad.validate(), ConfigError);
  bad = c;
  bad.tie_embeddings = transformer::TieEmbeddings::all;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("src_vocab must be equal to tgt_vocab"));
  auto attrs = c.to_attrs();
  attrs.erase("d_ff");
  REQUIRE_THROWS_WITH(TransformerConfig::from_attrs(attrs, "tf.h5"), Catch::Contains("tf.h5: no attribute 'd_ff' in /config"));
  attrs = c.to_attrs();
  attrs["arch"] = std::string("rnn");
  REQUIRE_THROWS_WITH(TransformerConfig::from_attrs(attrs, "tf.h5"),
                      Catch::Contains("tf.h5: /config attribute 'arch': unknown arch 'rnn'"));
  REQUIRE_THROWS_AS(TransformerConfig::from_attrs(attrs), FormatError);   // bad input, not a usage error
  // The option's name and value, once: no tie_output/shared_vocab beside it.
  CHECK(std::get<std::string>(c.to_attrs().at("tie_embeddings")) == "output");
  CHECK(c.to_attrs().count("tie_output") == 0);
}

TEST_CASE("Transformer params: stable module-path names, one per tensor", "[unit][transformer]") {
  Rng rng(3);
  TransformerConfig c = tiny_config(TransformerArch::encdec);
  c.tie_embeddings = transformer::TieEmbeddings::none;
  Transformer model(c, rng);
  std::set<std::string> names;
  for (Param* p : model.params()) {
    CHECK(p->grad.shape() == p->value.shape());
    names.insert(p->name);
  }
  CHECK(names.size() == model.params().size());
  for (const char* n : {"src_embed/table", "tgt_embed/table", "encoder/layer0/self_attn/w_q",
                        "encoder/layer0/ffn/in/W", "decoder/layer0/cross_attn/w_k", "decoder/layer0/norm3/gamma",
                        "output/W", "output/b"})
    CHECK(names.count(n) == 1);
  CHECK(model.params().front()->name == "src_embed/table");
}

TEST_CASE("Transformer encdec (post-norm, sinusoidal, tied) gradient matches finite differences",
          "[gradcheck][transformer]") {
  check_model_gradient(tiny_config(TransformerArch::encdec), 11);
}

TEST_CASE("Transformer encdec (pre-norm, learned, one table for all embeddings, window) gradient matches finite "
          "differences",
          "[gradcheck][transformer]") {
  TransformerConfig c = tiny_config(TransformerArch::encdec);
  c.norm = nn::NormPosition::pre;
  c.pos_encoding = transformer::PositionalKind::learned;
  c.tie_embeddings = transformer::TieEmbeddings::all;
  c.src_vocab = c.tgt_vocab;
  c.attn_window = 1;
  check_model_gradient(c, 12);
}

TEST_CASE("Transformer lm (pre-norm, learned, untied) gradient matches finite differences",
          "[gradcheck][transformer]") {
  TransformerConfig c = tiny_config(TransformerArch::lm);
  c.norm = nn::NormPosition::pre;
  c.pos_encoding = transformer::PositionalKind::learned;
  c.tie_embeddings = transformer::TieEmbeddings::none;
  check_model_gradient(c, 13);
}

TEST_CASE("Transformer mlm (segments, tied) gradient matches finite differences", "[gradcheck][transformer]") {
  check_model_gradient(tiny_config(TransformerArch::mlm), 14);
}

TEST_CASE("Transformer: a later target token never changes earlier logits", "[unit][transformer]") {
  for (TransformerArch arch : {TransformerArch::encdec, TransformerArch::lm}) {
    for (int64_t window : {-1, 1}) {
      Rng rng(21);
      TransformerConfig c = tiny_config(arch);
      c.attn_window = window;
      const Transformer model(c, rng);
      TokenBatch batch = tiny_batch(c, rng);
      const Tensor before = model.logits(batch);   // [B, T, V]
      REQUIRE(before.shape() == Shape{2, 4, 10});
      batch.tgt.idata()[1] = batch.tgt.idata()[1] == 5 ? 6 : 5;   // row 0, position 1
      const Tensor after = model.logits(batch);
      const int64_t V = 10;
      for (int64_t i = 0; i < 2 * V; ++i) CHECK(after.at(i) == Approx(before.at(i)).margin(1e-6));   // t = 0, 1
      double change = 0;
      for (int64_t i = 2 * V; i < 3 * V; ++i) change += std::abs(after.at(i) - before.at(i));   // t = 2
      CHECK(change > 1e-4);
      for (int64_t i = 4 * V; i < 8 * V; ++i) CHECK(after.at(i) == before.at(i));   // row 1 untouched
    }
  }
}

TEST_CASE("Transformer: bad batches are rejected with the tensor named", "[unit][transformer]") {
  Rng rng(4);
  const TransformerConfig c = tiny_config(TransformerArch::encdec);
  Transformer model(c, rng);
  TokenBatch batch = tiny_batch(c, rng);
  batch.tgt_len = Tensor::from_ints({3}, {1, 1, 1});
  REQUIRE_THROWS_WITH(model.evaluate(batch), Catch::Contains("tgt_len [B] has shape [3], expected [2]"));
  batch = tiny_batch(c, rng);
  batch.src.idata()[0] = 11;
  REQUIRE_THROWS_AS(model.evaluate(batch), DataError);
  batch = tiny_batch(c, rng);
  TokenBatch longer = batch;
  longer.tgt = Tensor({2, 17}, DType::i32);
  REQUIRE_THROWS_WITH(model.evaluate(longer), Catch::Contains("exceed max_len 16"));
}

TEST_CASE("mask_tokens: 15% of regular tokens chosen, 80/10/10 mask/random/kept", "[unit][transformer]") {
  const int64_t B = 64, S = 100, V = 1000;
  Rng rng(5);
  TokenBatch batch;
  batch.src = Tensor({B, S}, DType::i32);
  std::vector<int32_t> len(B);
  for (int64_t b = 0; b < B; ++b) {
    len[static_cast<size_t>(b)] = static_cast<int32_t>(S - b % 10);   // a few PAD positions
    for (int64_t t = 0; t < len[static_cast<size_t>(b)]; ++t)
      batch.src.idata()[b * S + t] = static_cast<int32_t>(t == 0 ? data::kBos : 4 + rng.uniform_int(V - 4));
  }
  batch.src_len = Tensor::from_ints({B}, len);
  const int32_t mask_id = static_cast<int32_t>(V);
  const TokenBatch m = transformer::mask_tokens(batch, rng, mask_id, V);
  int64_t eligible = 0, chosen = 0, masked = 0, random = 0, kept = 0;
  for (int64_t i = 0; i < B * S; ++i) {
    const int32_t orig = batch.src.idata()[i], in = m.src.idata()[i], tgt = m.tgt.idata()[i];
    if (orig >= 4) ++eligible;
    if (tgt == data::kPad) {
      CHECK(in == orig);   // unchosen positions (PAD, BOS included) are left alone
      continue;
    }
    CHECK(tgt == orig);
    CHECK(orig >= 4);
    ++chosen;
    if (in == mask_id)
      ++masked;
    else if (in == orig)
      ++kept;
    else
      ++random;
    if (in != mask_id) CHECK((in >= 4 && in < V));
  }
  const double rate = static_cast<double>(chosen) / static_cast<double>(eligible);
  CHECK(rate == Approx(0.15).margin(0.015));   // ~6000 eligible: sd ~0.005
  CHECK(static_cast<double>(masked) / chosen == Approx(0.8).margin(0.035));
  CHECK(static_cast<double>(random) / chosen == Approx(0.1).margin(0.025));
  CHECK(static_cast<double>(kept) / chosen == Approx(0.1).margin(0.025));
  CHECK(m.tgt_len.idata()[3] == len[3]);
}

TEST_CASE("mask_tokens with `only`: the flagged tokens alone are chosen, at the selection rate", "[unit][transformer]") {
  const int64_t B = 64, S = 100, V = 40;
  Rng rng(6);
  TokenBatch batch;
  batch.src = Tensor({B, S}, DType::i32);
  for (int64_t i = 0; i < B * S; ++i) batch.src.idata()[i] = static_cast<int32_t>(4 + rng.uniform_int(V - 4));
  batch.src_len = Tensor::from_ints({B}, std::vector<int32_t>(B, static_cast<int32_t>(S)));
  transformer::MaskingOptions o;
  o.select = 0.3f;
  o.only.assign(V, false);
  for (int32_t id = 4; id < V; id += 3) o.only[static_cast<size_t>(id)] = true;   // a third of the words
  const TokenBatch m = transformer::mask_tokens(batch, rng, static_cast<int32_t>(V), V, o);
  int64_t flagged = 0, chosen = 0;
  for (int64_t i = 0; i < B * S; ++i) {
    const int32_t orig = batch.src.idata()[i], tgt = m.tgt.idata()[i];
    const bool is_flagged = o.only[static_cast<size_t>(orig)];
    flagged += is_flagged;
    if (tgt == data::kPad) continue;
    CHECK(is_flagged);   // never an unflagged word
    ++chosen;
  }
  CHECK(static_cast<double>(chosen) / static_cast<double>(flagged) == Approx(0.3).margin(0.03));   // ~2100 flagged
  // The validation masking (fixed per example) honours it too.
  std::vector<int64_t> examples(B);
  for (int64_t b = 0; b < B; ++b) examples[static_cast<size_t>(b)] = b;
  const TokenBatch v = transformer::mask_examples(batch, 9, examples, static_cast<int32_t>(V), V, o);
  int64_t valid_chosen = 0;
  for (int64_t i = 0; i < B * S; ++i)
    if (v.tgt.idata()[i] != data::kPad) {
      CHECK(o.only[static_cast<size_t>(batch.src.idata()[i])]);
      ++valid_chosen;
    }
  CHECK(valid_chosen > 0);
}

TEST_CASE("Transformer lm learns a deterministic counting sequence", "[integration][transformer]") {
  // Each sequence counts up from a random start through tokens 4..15 cyclically for 8 tokens,
  // then EOS. After training, greedy continuation of its first token reproduces it.
  TransformerConfig c;
  c.arch = TransformerArch::lm;
  c.tgt_vocab = 16;
  c.d_model = 32;
  c.heads = 2;
  c.d_ff = 64;
  c.dec_layers = 1;
  c.dropout = 0.0f;
  c.max_len = 16;
  c.label_smoothing = 0.0f;
  Rng rng(31);
  Transformer model(c, rng);
  const int64_t B = 16, T = 9;
  auto make = [&](Rng& r, Tensor& first) {
    TokenBatch batch;
    batch.tgt = Tensor({B, T}, DType::i32);
    first = Tensor({B, 1}, DType::i32);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t start = r.uniform_int(12);
      for (int64_t t = 0; t < 8; ++t) batch.tgt.idata()[b * T + t] = static_cast<int32_t>(4 + (start + t) % 12);
      batch.tgt.idata()[b * T + 8] = data::kEos;
      first.idata()[b] = batch.tgt.idata()[b * T];
    }
    batch.tgt_len = Tensor::from_ints({B}, std::vector<int32_t>(B, static_cast<int32_t>(T)));
    return batch;
  };
  optim::Adam adam({/*lr=*/3e-3f});
  ParamList params = model.params();
  Rng data_rng(32), dropout_rng(33);
  Tensor first;
  for (int64_t step = 1; step <= 150; ++step) {
    const TokenBatch batch = make(data_rng, first);
    zero_grads(params);
    model.train_step(batch, dropout_rng);
    adam.step(params, step);
  }
  const TokenBatch test = make(data_rng, first);
  const decode::Decoded out = transformer::greedy(model, first, Tensor::from_ints({B}, std::vector<int32_t>(B, 1)), {});
  int64_t right = 0;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> want(test.tgt.idata() + b * T + 1, test.tgt.idata() + b * T + 8);
    right += out.tokens[static_cast<size_t>(b)] == want;
  }
  CHECK(right == B);
}

TEST_CASE("mlm evaluation masks each example the same whatever the batches", "[unit][transformer]") {
  Rng rng(21);
  const TransformerConfig c = tiny_config(TransformerArch::mlm);
  const Transformer model(c, rng);
  const int64_t N = 12, L = 9;
  std::vector<int32_t> len;
  for (int64_t i = 0; i < N; ++i) len.push_back(static_cast<int32_t>(2 + i % 7));
  data::TokenSplit split;
  split.name = "valid";
  split.src = random_tokens(N, L, len, c.tgt_vocab, rng, /*eos=*/false);
  split.src_len = Tensor::from_ints({N}, len);
  const train::EvalResult one_batch = transformer::evaluate_transformer(model, split, /*max_tokens=*/1000);
  // Batches of one or two: an mlm reads [CLS] x [SEP], at most 10 positions.
  const train::EvalResult many = transformer::evaluate_transformer(model, split, /*max_tokens=*/11);
  REQUIRE(one_batch.stats.count > 0);
  CHECK(many.stats.count == one_batch.stats.count);             // the same tokens masked...
  CHECK(many.stats.loss_sum == Approx(one_batch.stats.loss_sum).epsilon(1e-5));   // ...and scored alike
  // The mask follows the example, not its position in the batch.
  const int64_t a[] = {3, 7}, b[] = {7};
  const TokenBatch both = train::gather_token_batch(split, a), alone = train::gather_token_batch(split, b);
  const TokenBatch m2 = transformer::mask_examples(both, 5, a, model.mask_token_id(), c.tgt_vocab);
  const TokenBatch m1 = transformer::mask_examples(alone, 5, b, model.mask_token_id(), c.tgt_vocab);
  for (int64_t t = 0; t < len[7]; ++t) CHECK(m2.src.idata()[both.src.dim(1) + t] == m1.src.idata()[t]);
}

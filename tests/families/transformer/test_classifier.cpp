// Tests of transformer::TransformerClassifier: the [CLS]/[SEP] inputs of each architecture, gradient
// checks of the head with an lm body (with GPT's auxiliary LM loss) and an mlm body (sentence
// pairs, segment embeddings), and a frozen body receiving no gradient.
#include <algorithm>
#include <cmath>

#include "attn/families/transformer/classifier.hpp"
#include "test_support.hpp"

using namespace attn;
using transformer::ClassifierBatch;
using transformer::ClassifierConfig;
using transformer::TransformerArch;
using transformer::TransformerClassifier;

namespace {

ClassifierConfig tiny_classifier(TransformerArch arch, float aux_lm) {
  ClassifierConfig c;
  c.body.arch = arch;
  c.body.tgt_vocab = 10;
  c.body.d_model = 8;
  c.body.heads = 2;
  c.body.d_ff = 16;
  c.body.enc_layers = 1;
  c.body.dec_layers = 1;
  c.body.dropout = 0.0f;
  c.body.max_len = 16;
  c.body.label_smoothing = 0.1f;
  c.classes = 3;
  c.aux_lm = aux_lm;
  return c;
}

// Three rows: "4 5 6", the pair "7 8" | "9", and "5".
ClassifierBatch tiny_batch(TransformerArch arch) {
  const Tensor src = Tensor::from_ints({3, 3}, {4, 5, 6, 7, 8, 9, 5, 0, 0});
  const Tensor len = Tensor::from_ints({3}, {3, 3, 1});
  const Tensor seg = Tensor::from_ints({3, 3}, {0, 0, 0, 0, 0, 1, 0, 0, 0});
  return transformer::classifier_batch(arch, src, len, seg, Tensor::from_ints({3}, {2, 0, 1}));
}

std::vector<int32_t> ints(const Tensor& t) { return {t.idata(), t.idata() + t.numel()}; }

// The analytic gradient of the mean objective against central differences of evaluate(), for up
// to 5 entries of every parameter tensor.
void check_classifier_gradient(const ClassifierConfig& config, uint64_t seed) {
  Rng rng(seed);
  TransformerClassifier model(config, rng);
  const ClassifierBatch batch = tiny_batch(config.body.arch);
  ParamList params = model.params();
  zero_grads(params);
  Rng dropout_rng(1);
  const transformer::ClassifierStats stats = model.train_step(batch, dropout_rng, /*train_body=*/true);
  REQUIRE(stats.count == 3);
  if (config.aux_lm > 0) REQUIRE(stats.lm.tokens > 0);
  CHECK(model.evaluate(batch).objective(config.aux_lm) == Approx(stats.objective(config.aux_lm)).epsilon(1e-5));
  auto loss = [&] { return model.evaluate(batch).objective(config.aux_lm); };
  Rng pick(seed + 100);
  test::check_sampled_grads(params, loss, pick, {.samples = 5, .eps = 3e-3, .abs_tol = 1e-4, .rel_tol = 1e-2});
}

}  // namespace

TEST_CASE("classifier inputs: BERT reads [CLS] A [SEP] B [SEP] with segments, GPT the text then EOS", "[unit][classifier]") {
  const ClassifierBatch bert = tiny_batch(TransformerArch::mlm);
  // row 0: [CLS] 4 5 6 [SEP]; row 1: [CLS] 7 8 [SEP] 9 [SEP]; row 2: [CLS] 5 [SEP]
  CHECK(bert.tokens.src.shape() == Shape{3, 6});
  CHECK(ints(bert.tokens.src) == std::vector<int32_t>{1, 4, 5, 6, 2, 0, 1, 7, 8, 2, 9, 2, 1, 5, 2, 0, 0, 0});
  CHECK(ints(bert.tokens.segments) == std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0});
  CHECK(ints(bert.tokens.src_len) == std::vector<int32_t>{5, 6, 3});
  CHECK(ints(bert.read_at) == std::vector<int32_t>{0, 0, 0});
  for (int64_t len : {3, 1}) CHECK(transformer::classifier_input_length(TransformerArch::mlm, len, false) == len + 2);
  CHECK(transformer::classifier_input_length(TransformerArch::mlm, 3, true) == 6);

  const ClassifierBatch gpt = tiny_batch(TransformerArch::lm);
  // tgt: 4 5 6 EOS; 7 8 [SEP] 9 EOS; 5 EOS. The decoder reads BOS first, so position
  // tgt_len - 1 holds the last token of the text.
  CHECK(ints(gpt.tokens.tgt) == std::vector<int32_t>{4, 5, 6, 2, 0, 7, 8, 2, 9, 2, 5, 2, 0, 0, 0});
  CHECK(ints(gpt.tokens.tgt_len) == std::vector<int32_t>{4, 5, 2});
  CHECK(ints(gpt.read_at) == std::vector<int32_t>{3, 4, 1});
  CHECK(transformer::classifier_input_length(TransformerArch::lm, 3, true) == 5);

  REQUIRE_THROWS_WITH(transformer::classifier_batch(TransformerArch::encdec, Tensor::from_ints({1, 1}, {4}),
                                                    Tensor::from_ints({1}, {1}), {}, {}),
                      Catch::Contains("an lm or an mlm, not 'encdec'"));
}

TEST_CASE("classifier on an lm body with the auxiliary LM loss: gradient matches finite differences", "[gradcheck][classifier]") {
  check_classifier_gradient(tiny_classifier(TransformerArch::lm, 0.5f), 21);
}

TEST_CASE("classifier on an lm body: gradient matches finite differences", "[gradcheck][classifier]") {
  check_classifier_gradient(tiny_classifier(TransformerArch::lm, 0.0f), 22);
}

TEST_CASE("classifier on an mlm body (pairs, segments): gradient matches finite differences", "[gradcheck][classifier]") {
  ClassifierConfig c = tiny_classifier(TransformerArch::mlm, 0.0f);
  c.body.norm = nn::NormPosition::pre;
  check_classifier_gradient(c, 23);
}

TEST_CASE("classifier: a frozen body gets no gradient, the head does, and the config is validated", "[unit][classifier]") {
  Rng rng(5);
  TransformerClassifier model(tiny_classifier(TransformerArch::mlm, 0.0f), rng);
  ParamList all = model.params();
  zero_grads(all);
  Rng dropout_rng(1);
  model.train_step(tiny_batch(TransformerArch::mlm), dropout_rng, /*train_body=*/false);
  for (Param* p : model.body().params()) {
    INFO(p->name);
    CHECK(std::all_of(p->grad.data(), p->grad.data() + p->grad.numel(), [](float g) { return g == 0.0f; }));
  }
  double head = 0;
  for (Param* p : model.head_params())
    for (int64_t i = 0; i < p->grad.numel(); ++i) head += std::abs(p->grad.data()[i]);
  CHECK(head > 0);
  CHECK(model.params().size() == model.body().params().size() + 2);

  ClassifierConfig bad = tiny_classifier(TransformerArch::mlm, 0.5f);
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("aux_lm") && Catch::Contains("needs arch lm, got mlm"));
  bad.aux_lm = 0;
  bad.classes = 1;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("classes must be in [2, 2147483647], got 1"));
  // Sizes from a damaged /config (fuzz_semantic): an overflowing product, a vector of 2^30 layers.
  bad.classes = INT64_MAX;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("classes must be in [2, 2147483647], got 9223372036854775807"));
  bad.classes = 3;
  bad.body.d_ff = INT64_MAX;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("d_ff must be in [1, 65536], got 9223372036854775807"));
  bad.body.d_ff = 8;
  bad.body.arch = TransformerArch::lm;
  bad.body.dec_layers = int64_t{1} << 30;
  REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains("dec_layers must be in [1, 1024], got 1073741824"));
  const ClassifierConfig good = tiny_classifier(TransformerArch::lm, 0.5f);
  CHECK(ClassifierConfig::from_attrs(good.to_attrs()).to_attrs() == good.to_attrs());
}

// Fine-tuning (attn/families/transformer/classifier_run.hpp): loading a pre-trained model keeps its weights bit for
// bit and refuses a model of the wrong architecture or vocabulary naming both files; a frozen
// encoder is saved unchanged; and pre-training helps: a tiny Transformer pre-trained on unlabelled
// text classifies examples made of words the labelled training set never shows, where the same
// model trained from scratch cannot.
#include <algorithm>
#include <vector>

#include "attn/data/batching.hpp"
#include "attn/families/transformer/classifier_run.hpp"
#include "attn/optim/config.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;
using transformer::TransformerArch;

namespace {

// The generated task: the regular words come in two groups of 8, A = ids 4..11 and B = 12..19.
// A sentence (4 to 8 words) draws all its words from one group, and its class is that group.
// Pre-training text mixes both groups freely; the labelled training set only uses the first half
// of each group (4..7, 12..15), the test set only the second half (8..11, 16..19): a model can only
// classify the test sentences through what pre-training taught it about those words.
constexpr int32_t kGroup = 8, kVocab = 4 + 2 * kGroup;

data::Vocab group_vocab() {
  std::vector<std::string> tokens(data::kReservedTokens, data::kReservedTokens + data::kNumReserved);
  for (int32_t id = 4; id < kVocab; ++id) {
    std::string token(1, id < 4 + kGroup ? 'a' : 'b');   // appended, not concatenated: GCC 12's -Wrestrict
    token += std::to_string(id);
    tokens.push_back(token);
  }
  return data::Vocab::from_tokens(tokens);
}

// n sentences; half: -1 any word of the group, 0 its first half, 1 its second half.
std::vector<std::vector<int32_t>> sentences(int64_t n, int half, Rng& rng, std::vector<int32_t>* groups) {
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < n; ++i) {
    const auto group = static_cast<int32_t>(rng.uniform_int(2));
    const int64_t len = 4 + rng.uniform_int(5);
    std::vector<int32_t> s;
    for (int64_t t = 0; t < len; ++t) {
      const int64_t k = half < 0 ? rng.uniform_int(kGroup) : half * kGroup / 2 + rng.uniform_int(kGroup / 2);
      s.push_back(static_cast<int32_t>(4 + group * kGroup + k));
    }
    out.push_back(std::move(s));
    if (groups) groups->push_back(group);
  }
  return out;
}

data::TokenSplit text_split(const std::string& name, int64_t n, Rng& rng) {
  std::vector<std::vector<int32_t>> src = sentences(n, -1, rng, nullptr), tgt = src;
  for (auto& t : tgt) t.push_back(data::kEos);
  const data::PaddedBatch a = data::pad_sequences(src), b = data::pad_sequences(tgt);
  return {.name = name, .src = a.tokens, .src_len = a.lengths, .tgt = b.tokens, .tgt_len = b.lengths, .segments = {}};
}

transformer::LabelledSplit labelled_split(const std::string& name, int64_t n, int half, Rng& rng) {
  std::vector<int32_t> groups;
  const data::PaddedBatch p = data::pad_sequences(sentences(n, half, rng, &groups));
  return {.name = name, .src = p.tokens, .src_len = p.lengths, .segments = Tensor(p.tokens.shape(), DType::i32),
          .label = Tensor::from_ints({n}, groups)};
}

transformer::TransformerConfig tiny_body(TransformerArch arch) {
  transformer::TransformerConfig c;
  c.arch = arch;
  c.tgt_vocab = kVocab;
  c.d_model = 32;
  c.heads = 2;
  c.d_ff = 64;
  c.enc_layers = c.dec_layers = 1;
  c.dropout = 0.0f;
  c.max_len = 16;
  c.label_smoothing = 0.0f;
  return c;
}

train::TrainConfig adam(int64_t epochs, int64_t batch_size, double lr, uint64_t seed) {
  train::TrainConfig tc;
  tc.epochs = epochs;
  tc.batch_size = batch_size;
  tc.seed = seed;
  tc.optimizer.kind = optim::OptimizerKind::adam;
  tc.optimizer.schedule = optim::ConstantLr(static_cast<float>(lr));
  return tc;
}

// Pre-trains a body on the text (lm or mlm), in memory.
transformer::Transformer pretrain(TransformerArch arch, const data::TokenSplit& text, const data::Vocab& vocab,
                                  uint64_t seed) {
  Rng init(seed);
  transformer::Transformer model(tiny_body(arch), init);
  train::fit(transformer::transformer_task(model, text, nullptr, vocab, vocab), adam(6, 32, 3e-3, seed));
  return model;
}

// Test accuracy of a classifier fine-tuned on `train`.
double fine_tune(transformer::TransformerClassifier& model, const transformer::LabelledSplit& train,
                 const transformer::LabelledSplit& test, const data::Vocab& vocab, uint64_t seed) {
  const std::vector<std::string> labels{"a", "b"};
  train::fit(transformer::classifier_task(model, train, nullptr, vocab, labels, /*freeze_body=*/false),
             adam(15, 16, 1e-3, seed));
  const train::BatchStats s = transformer::evaluate_classifier(model, test, 64);
  return s.sum(1) / s.count;
}

// A model file of the body `config` (its weights from Rng(seed)), as attn-transformer train
// writes it, with `vocab` as its vocabulary.
void write_pretrained(const std::string& path, const transformer::TransformerConfig& config, const data::Vocab& vocab,
                      uint64_t seed) {
  Rng init(seed);
  transformer::Transformer model(config, init);
  io::Checkpoint ckpt;
  ckpt.kind = "transformer";
  ckpt.config = config.to_attrs();
  ckpt.params = io::collect_params(model.params());
  io::File f = io::File::create(path);
  io::write_checkpoint(f, ckpt);
  train::write_vocabs(f, vocab, vocab);
  f.commit();
}

void write_labelled(const std::string& path, const transformer::LabelledSplit& train, const data::Vocab& vocab) {
  io::File f = io::File::create(path);
  transformer::write_labelled_split(f, "train", train);
  transformer::write_labels(f, {"a", "b"});
  data::write_vocab(f, "/vocab/src", vocab);
  f.commit();
}

}  // namespace

TEST_CASE("fine-tuning a pre-trained Transformer beats the same model trained from scratch", "[integration][finetune]") {
  const data::Vocab vocab = group_vocab();
  Rng data_rng(11);
  const data::TokenSplit text = text_split("train", 1500, data_rng);
  const transformer::LabelledSplit train = labelled_split("train", 64, 0, data_rng);
  const transformer::LabelledSplit test = labelled_split("test", 200, 1, data_rng);
  for (TransformerArch arch : {TransformerArch::mlm, TransformerArch::lm}) {
    INFO("arch " << transformer::arch_name(arch));
    Rng head(3), fresh(3);
    transformer::TransformerClassifier pre(pretrain(arch, text, vocab, 5), 2, 0.0f, head);
    transformer::TransformerClassifier scratch(transformer::ClassifierConfig{tiny_body(arch), 2, 0.0f}, fresh);
    const double pre_acc = fine_tune(pre, train, test, vocab, 7), scratch_acc = fine_tune(scratch, train, test, vocab, 7);
    INFO("test accuracy: pre-trained " << pre_acc << ", from scratch " << scratch_acc);
    CHECK(pre_acc >= 0.9);
    CHECK(pre_acc >= scratch_acc + 0.2);
  }
}

TEST_CASE("loading a pre-trained model keeps every weight, a wrong architecture or vocabulary names both files", "[io][finetune]") {
  test::TempDir dir;
  const data::Vocab vocab = group_vocab();
  Rng rng(2);
  const std::string data_path = dir.file("cls.h5");
  write_labelled(data_path, labelled_split("train", 8, -1, rng), vocab);
  const io::File data = io::File::open_read(data_path);
  const transformer::LabelledData labelled = transformer::read_labelled_data(data);

  for (TransformerArch arch : {TransformerArch::lm, TransformerArch::mlm}) {
    const std::string pre = dir.file(std::string("pre_") + transformer::arch_name(arch) + ".h5");
    write_pretrained(pre, tiny_body(arch), vocab, 9);
    transformer::TransformerFile m = transformer::load_pretrained(pre, data, labelled);
    Rng head(1);
    transformer::TransformerClassifier c(std::move(m.model), 2, 0.0f, head);
    const io::Checkpoint saved = io::load_checkpoint(pre, "transformer");
    ParamList body = c.body().params();
    REQUIRE(body.size() == saved.params.size());
    for (const Param* p : body) {
      INFO(p->name);
      const Tensor& want = saved.params.at(p->name);
      REQUIRE(want.shape() == p->value.shape());
      CHECK(std::equal(want.data(), want.data() + want.numel(), p->value.data()));
    }
  }

  transformer::TransformerConfig encdec = tiny_body(TransformerArch::encdec);
  encdec.src_vocab = kVocab;
  write_pretrained(dir.file("encdec.h5"), encdec, vocab, 9);
  REQUIRE_THROWS_AS(transformer::load_pretrained(dir.file("encdec.h5"), data, labelled), DataError);
  REQUIRE_THROWS_WITH(transformer::load_pretrained(dir.file("encdec.h5"), data, labelled),
                      Contains(dir.file("encdec.h5")) && Contains(data_path) && Contains("encdec"));

  {   // a model of another family
    io::Checkpoint ckpt;
    ckpt.kind = "seq2seq";
    io::save_checkpoint(dir.file("s2s.h5"), ckpt);
  }
  REQUIRE_THROWS_AS(transformer::load_pretrained(dir.file("s2s.h5"), data, labelled), FormatError);
  REQUIRE_THROWS_WITH(transformer::load_pretrained(dir.file("s2s.h5"), data, labelled),
                      Contains(dir.file("s2s.h5")) && Contains(data_path) && Contains("kind 'seq2seq'"));

  std::vector<std::string> other = vocab.tokens();
  std::swap(other[4], other[5]);
  transformer::TransformerConfig lm = tiny_body(TransformerArch::lm);
  write_pretrained(dir.file("other.h5"), lm, data::Vocab::from_tokens(other), 9);
  REQUIRE_THROWS_AS(transformer::load_pretrained(dir.file("other.h5"), data, labelled), DataError);
  REQUIRE_THROWS_WITH(transformer::load_pretrained(dir.file("other.h5"), data, labelled),
                      Contains(dir.file("other.h5")) && Contains(data_path) && Contains("id 4: 'a4' against 'a5'"));

  lm.max_len = 4;   // the examples (up to 8 words) do not fit
  write_pretrained(dir.file("short.h5"), lm, vocab, 9);
  REQUIRE_THROWS_WITH(transformer::load_pretrained(dir.file("short.h5"), data, labelled),
                      Contains("max_len 4") && Contains(dir.file("short.h5")));
}

TEST_CASE("a frozen encoder is saved unchanged and only the head is trained", "[integration][finetune]") {
  test::TempDir dir;
  const data::Vocab vocab = group_vocab();
  Rng rng(4);
  const transformer::LabelledSplit train = labelled_split("train", 32, -1, rng);
  const std::string pre = dir.file("pre.h5"), out = dir.file("ft.h5");
  write_pretrained(pre, tiny_body(TransformerArch::mlm), vocab, 9);
  Rng head(1);
  transformer::TransformerClassifier model(transformer::load_transformer(pre).model, 2, 0.0f, head);
  const io::TensorMap before_head = io::collect_params(model.head_params());
  const std::vector<std::string> labels{"a", "b"};
  train::TrainConfig tc = adam(2, 8, 1e-2, 1);
  tc.model_path = out;
  train::fit(transformer::classifier_task(model, train, nullptr, vocab, labels, /*freeze_body=*/true), tc);

  const transformer::ClassifierFile ft = transformer::load_classifier(out);
  const io::Checkpoint saved = io::load_checkpoint(pre, "transformer");
  const io::Checkpoint tuned = io::load_checkpoint(out, transformer::kClassifierKind);
  REQUIRE(tuned.params.size() == saved.params.size() + 2);
  for (const auto& [name, want] : saved.params) {
    INFO(name);
    const Tensor& got = tuned.params.at(name);
    CHECK(std::equal(want.data(), want.data() + want.numel(), got.data()));
  }
  const Tensor& w0 = before_head.at("classifier/W");
  const Tensor& w1 = tuned.params.at("classifier/W");
  CHECK(!std::equal(w0.data(), w0.data() + w0.numel(), w1.data()));
  CHECK(ft.labels == labels);
  CHECK(ft.vocab.tokens() == vocab.tokens());
}

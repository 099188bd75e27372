// Transformer model files read without attnlab (docs/FORMATS.md, "Checking a reader"): the real
// tool trains each model a few steps on a tiny generated data set (so that no weight is at its
// initial value), the library reloads the file and computes teacher-forced logits on a fixed
// batch, and tests/formats/reload.py, which imports only h5py and numpy, rebuilds the model from
// the file's /config and /params with this family's module tests/families/transformer/reload.py
// and must reproduce those logits to 1e-4 (encdec, lm, mlm, and cmlm with its length logits);
// for a fine-tuned Transformer classifier (lm and mlm bodies, pre-trained and fine-tuned by
// attn-transformer on sentence pairs from attn-data pairs), the class logits of pairs and single
// sentences and what `attn-transformer classify` wrote. A wrong convention (sinusoids in halves,
// the classifier's position, the [SEP]'s segment) must be noticed. The shared steps are in
// tests/support/reload_support.hpp; the cases are "formats: ..." in CTest.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attn/data/token_batch.hpp"
#include "attn/families/transformer/classifier_run.hpp"
#include "attn/families/transformer/model.hpp"
#include "attn/families/transformer/run.hpp"
#include "attn/io/hdf5_file.hpp"
#include "reload_support.hpp"
#include "test_support.hpp"

using namespace attn;
using test::batch_file;
using test::case_files;
using test::check_broken;
using test::check_reload;
using test::model_file;

namespace {

const char* kTransformerSteps = " --lr-schedule constant";

// Trains a Transformer with `options`, then writes its logits on the test batch.
void transformer_case(const test::TempDir& dir, const std::string& name, const std::string& options) {
  test::train_token_model(dir, name, "attn-transformer", options, kTransformerSteps);
  const transformer::TransformerFile m = transformer::load_transformer(dir.file(model_file(name)));
  const transformer::TransformerConfig& c = m.model.config();
  data::TokenBatch batch = test::token_test_batch(dir, transformer::transformer_request(c));
  if (c.arch == transformer::TransformerArch::cmlm) {   // CMLM's masking, the decoder's logits and the lengths'
    std::vector<int64_t> examples(test::kReloadRows);
    std::iota(examples.begin(), examples.end(), int64_t{0});
    const transformer::CmlmBatch cb = transformer::cmlm_mask_examples(batch, /*seed=*/5, examples,
                                                                      m.model.mask_token_id());
    const Tensor memory = m.model.encode(cb.src, cb.src_len);
    io::File f = io::File::create(dir.file(batch_file(name)));
    f.write_all("/", {{"src", cb.src},
                      {"src_len", cb.src_len},
                      {"tgt", cb.dec_in},
                      {"tgt_len", cb.tgt_len},
                      {"logits", m.model.nat_logits(cb.dec_in, cb.tgt_len, memory, cb.src, cb.src_len)},
                      {"length_logits", m.model.length_logits(memory)}});
    f.commit();
    return;
  }
  if (c.arch == transformer::TransformerArch::mlm) {   // BERT masking, so that [MASK] ids are fed
    std::vector<int64_t> examples(test::kReloadRows);
    std::iota(examples.begin(), examples.end(), int64_t{0});
    batch = transformer::mask_examples(batch, /*seed=*/5, examples, m.model.mask_token_id(), c.tgt_vocab,
                                       {.select = 0.5f, .replace_mask = 0.8f, .replace_random = 0.1f, .only = {}});
    int64_t masks = 0;
    for (int64_t i = 0; i < batch.src.numel(); ++i) masks += batch.src.idata()[i] == m.model.mask_token_id();
    REQUIRE(masks > 0);
  }
  test::write_token_batch(dir, name, batch, c.arch != transformer::TransformerArch::lm,
                          c.arch != transformer::TransformerArch::mlm, m.model.logits(batch));
}

// ---- fine-tuned Transformer classifier --------------------------------------------------------

// 40 line pairs of 2 to 5 words, de.txt (d0 .. d9) and en.txt (e0 .. e9, word for word, the
// last word sometimes dropped): attn-data pairs makes sentence pairs A | B of them (translation
// or other; 62 training rows, 10 test rows), and attn-data text, from both sides, an lm's
// pre-training text with the same vocabulary.
void write_parallel_text(const test::TempDir& dir) {
  std::mt19937 gen(5);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  std::string de, en;
  for (int line = 0; line < 40; ++line) {
    const int n = draw(2, 5);
    std::vector<int> words(static_cast<size_t>(n));
    for (int& w : words) w = draw(0, 9);
    const int translated = std::clamp(n + draw(-1, 1), 1, n);
    for (int i = 0; i < n; ++i) de.append(i ? " d" : "d").append(std::to_string(words[static_cast<size_t>(i)]));
    for (int i = 0; i < translated; ++i)
      en.append(i ? " e" : "e").append(std::to_string(words[static_cast<size_t>(i)] * 3 % 10));
    de += '\n';
    en += '\n';
  }
  test::write_text(dir.file("de.txt"), de);
  test::write_text(dir.file("en.txt"), en);
  test::write_text(dir.file("both.txt"), de + en);
}

// Pre-trains a Transformer with `pretrain` (--arch, --data: text.h5 or pairs.h5, and the model's
// options) for three Adam steps, fine-tunes it on pairs.h5 for three more (`finetune`: extra
// options), so that the weights of the body and the head are off their initial values, and runs
// attn-transformer classify on the test split (<name>.classify.h5, a second batch file for
// reload.py). Then writes the batch file: the test split's rows, every third cut to its sentence
// A (so that single sentences are read too), and the library's class logits [B, K] on them.
void classifier_case(const test::TempDir& dir, const std::string& name, const std::string& pretrain,
                     const std::string& finetune) {
  if (!std::filesystem::exists(dir.file("de.txt"))) write_parallel_text(dir);
  const char* steps = " --steps 3 --lr 0.01 --lr-schedule constant --seed 2 --threads 1 --quiet";
  std::string line = "{ test -f pairs.h5 || { {data} pairs --src-file de.txt --tgt-file en.txt --valid-n 4 "
                     "--test-n 5 --min-freq 1 --seed 3 --quiet --out pairs.h5 && {data} text --in both.txt "
                     "--vocab-from pairs.h5 --valid-n 4 --quiet --out text.h5; }; } && {tf} train ";
  line += pretrain;   // appended piecewise (GCC 12, -Wrestrict)
  line += " --max-tokens 96 --model " + name + ".pre.h5" + steps;
  line += " && {tf} finetune --init " + name + ".pre.h5 --data pairs.h5 --batch-size 16 --model " + model_file(name);
  line += finetune + steps;
  line += " && {tf} classify --model " + model_file(name) + " --data pairs.h5 --split test --threads 1 --quiet --out " +
          name + ".classify.h5";
  const test::ShellResult r = test::run_tools(dir, line, {{"{data}", "attn-data"}, {"{tf}", "attn-transformer"}});
  INFO(line << "\n" << r.err);
  REQUIRE(r.code == 0);

  const transformer::ClassifierFile m = transformer::load_classifier(dir.file(model_file(name)));
  const io::File data = io::File::open_read(dir.file("pairs.h5"));
  const transformer::LabelledSplit test = transformer::read_classifier_split(data, "test", m, model_file(name));
  std::vector<int64_t> index(static_cast<size_t>(test.size()));
  std::iota(index.begin(), index.end(), int64_t{0});
  const transformer::LabelledSplit rows = transformer::gather_labelled(test, index);
  Tensor src = rows.src.all().clone(), segments = rows.segments.all().clone(), src_len = rows.src_len.clone();
  const int64_t B = src.dim(0), L = src.dim(1);
  int64_t pairs = 0, single = 0;
  for (int64_t b = 0; b < B; ++b) {
    int32_t* seg = segments.idata() + b * L;
    const int32_t a = static_cast<int32_t>(std::count(seg, seg + src_len.idata()[b], 0));
    if (b % 3 == 2 && a < src_len.idata()[b]) {   // sentence A alone
      src_len.idata()[b] = a;
      std::fill(src.idata() + b * L + a, src.idata() + (b + 1) * L, 0);
      std::fill(seg + a, seg + L, 0);
    }
    (a < src_len.idata()[b] ? pairs : single) += 1;
  }
  REQUIRE(pairs > 0);
  REQUIRE(single > 0);
  const Tensor logits = m.model.logits(
      transformer::classifier_batch(m.model.config().body.arch, src, src_len, segments, Tensor()));
  io::File f = io::File::create(dir.file(batch_file(name)));
  f.write_all("/", {{"src", src}, {"src_len", src_len}, {"segments", segments}, {"logits", logits}});
  f.commit();
}

}  // namespace

TEST_CASE("formats: numpy reloads a Transformer encdec (post-norm, sinusoidal, tied output) and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  transformer_case(dir, "encdec",
                   "--arch encdec --norm post --pos-encoding sinusoidal --tie-embeddings output "
                   "--d-model 16 --heads 4 --d-ff 24 --enc-layers 2 --dec-layers 1");
  check_reload(dir, {"encdec"});
}

TEST_CASE("formats: numpy reloads a Transformer lm (pre-norm, learned positions, untied) and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  transformer_case(dir, "lm",
                   "--arch lm --norm pre --pos-encoding learned --tie-embeddings none --d-model 12 "
                   "--heads 3 --d-ff 20 --layers 2");
  check_reload(dir, {"lm"});
}

TEST_CASE("formats: numpy reloads a Transformer mlm ([MASK] inputs, self-attention window 2) and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  transformer_case(dir, "mlm",
                   "--arch mlm --norm post --pos-encoding learned --tie-embeddings output "
                   "--attn-window 2 --d-model 8 --heads 2 --d-ff 16 --layers 1");
  check_reload(dir, {"mlm"});
}

TEST_CASE("formats: numpy reloads a Transformer cmlm ([MASK]s reading copied source tokens, [LENGTH], pre-norm, "
          "untied) and reproduces its logits and length logits",
          "[integration][formats]") {
  test::TempDir dir;
  transformer_case(dir, "cmlm",
                   "--arch cmlm --decoder-inputs copy --norm pre --pos-encoding learned --tie-embeddings none "
                   "--d-model 8 --heads 2 --d-ff 16 --layers 1");
  check_reload(dir, {"cmlm"});
}

TEST_CASE("formats: numpy reloads a Transformer cmlm with one table for all (post-norm, sinusoidal, window 1)",
          "[integration][formats]") {
  test::TempDir dir;
  transformer_case(dir, "cmlm",
                   "--arch cmlm --norm post --pos-encoding sinusoidal --tie-embeddings all --attn-window 1 "
                   "--d-model 8 --heads 2 --d-ff 16 --layers 1");
  check_reload(dir, {"cmlm"});
}

TEST_CASE("formats: reload.py notices a wrong convention (sinusoids in halves)", "[integration][formats]") {
  test::TempDir dir;
  transformer_case(dir, "encdec", "--arch encdec --pos-encoding sinusoidal --d-model 8 --heads 2 --d-ff 16 --layers 1");
  check_broken(dir, case_files({"encdec"})[0], "sinusoid-halves");
}

TEST_CASE("formats: numpy reloads fine-tuned Transformer classifiers (lm and mlm bodies, sentence pairs and single "
          "sentences) and reproduces their class logits and attn-transformer classify",
          "[integration][formats]") {
  test::TempDir dir;
  // GPT: an lm pre-trained on text (pre-norm, learned positions, its own output layer, which only
  // the auxiliary LM loss reads); BERT: an mlm pre-trained on the pairs themselves, so that both
  // segment rows are trained (post-norm, sinusoids, tied output, a self-attention window).
  classifier_case(dir, "cls_lm",
                  "--arch lm --data text.h5 --norm pre --pos-encoding learned --tie-embeddings none "
                  "--d-model 12 --heads 3 --d-ff 20 --layers 2",
                  " --aux-lm 0.5");
  classifier_case(dir, "cls_mlm",
                  "--arch mlm --data pairs.h5 --norm post --pos-encoding sinusoidal "
                  "--tie-embeddings output --attn-window 4 --d-model 8 --heads 2 --d-ff 16 --layers 2",
                  "");
  std::vector<std::pair<std::string, std::string>> pairs = case_files({"cls_lm", "cls_mlm"});
  for (const std::string name : {"cls_lm", "cls_mlm"}) pairs.emplace_back(model_file(name), name + ".classify.h5");
  const std::string report = check_reload(dir, pairs);
  if (report.empty()) return;
  CHECK(report.find("transformer-classifier lm") != std::string::npos);
  CHECK(report.find("transformer-classifier mlm") != std::string::npos);
  CHECK(report.find("attn-transformer classify: max |probabilities diff|") != std::string::npos);
  // The lm reads its last position and the mlm [CLS]; the [SEP] after sentence A is in segment 0.
  check_broken(dir, pairs[0], "classifier-position");
  check_broken(dir, pairs[1], "classifier-position");
  check_broken(dir, pairs[1], "sep-segment");
  check_broken(dir, pairs[3], "sep-segment");
}

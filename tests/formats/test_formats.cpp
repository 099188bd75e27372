// The model files can be read without attnlab (docs/FORMATS.md): for each model, the real tool
// trains it a few steps on a tiny generated data set (so that no weight is at its initial value),
// the library reloads the file and computes teacher-forced logits on a fixed batch, and
// tests/formats/reload.py, which imports only h5py and numpy, rebuilds the model from the file's
// /config and /params following FORMATS.md and must reproduce those logits (and, for seq2seq, the
// attention weights) to 1e-4; for a memory network, trained on a small random bAbI-layout data
// set, every hop's attention to 1e-4 and the predicted answers exactly; for an NTM, what
// `attn-ntm run` wrote (outputs, every head's weighting, the cost in bits); for a captioner, the
// teacher-forced logits and attention and `attn-caption caption`'s greedy captions (exactly),
// scores and attention maps; for a fine-tuned Transformer classifier (lm and mlm bodies,
// pre-trained and fine-tuned by attn-transformer on sentence pairs from attn-data pairs), the
// class logits of pairs and single sentences and what `attn-transformer classify` wrote. Pairs of
// checkpoints one training step apart check the training conventions the page states: an NTM's
// SGD step against the gradient of its objective (central differences in reload.py) under both
// clippings, and a captioner's batch-normalisation running statistics. `reload.py --kinds` must
// list every model kind of every family of the registry (attn/families/registry.hpp). $PYTHON
// (default /usr/bin/python3) runs the script; without it, or without h5py or numpy, the cases are
// reported as skipped.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attn/data/token_batch.hpp"
#include "attn/data/token_data.hpp"
#include "attn/families/caption/run.hpp"
#include "attn/families/memnet/qa_data.hpp"
#include "attn/families/memnet/run.hpp"
#include "attn/families/registry.hpp"
#include "attn/families/seq2seq/run.hpp"
#include "attn/families/transformer/classifier_run.hpp"
#include "attn/families/transformer/model.hpp"
#include "attn/families/transformer/run.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/token_run.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// Examples of varied lengths (2..7 source tokens), so that every batch is padded.
const char* kData =
    "{data} reverse --vocab 12 --min-len 2 --max-len 7 --n 200 --valid-n 20 --test-n 20 --seed 3 --quiet "
    "--out data.h5";
// Three Adam steps at a constant rate of 0.01 move every weight (biases and norms included) off
// its initial value.
const char* kSteps = " --steps 3 --max-tokens 96 --lr 0.01 --seed 2 --threads 1 --quiet --data data.h5";
const char* kTransformerSteps = " --lr-schedule constant";
constexpr int64_t kRows = 6;   // the batch: the first rows of the test split

std::string python() {
  const char* env = std::getenv("PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

// A case's files in its TempDir: data.h5 (shared by the cases of one dir), <name>.model.h5 and
// <name>.batch.h5.
std::string model_file(const std::string& name) { return name + ".model.h5"; }
std::string batch_file(const std::string& name) { return name + ".batch.h5"; }

// Makes data.h5 (unless there) and trains `tool` (attn-transformer or attn-seq2seq) into the
// model file of `name`.
void train(const test::TempDir& dir, const std::string& name, const std::string& tool,
           const std::string& model_options) {
  const std::string line = "{ test -f data.h5 || " + std::string(kData) + "; } && {tool} train " + model_options +
                           kSteps + " --model " + model_file(name) +
                           (tool == "attn-transformer" ? kTransformerSteps : "");
  const test::ShellResult r = test::run_tools(dir, line, {{"{data}", "attn-data"}, {"{tool}", tool}});
  INFO(line << "\n" << r.err);
  REQUIRE(r.code == 0);
}

// The first kRows examples of the test split, as `request` reads them.
data::TokenBatch test_batch(const test::TempDir& dir, const data::TokenSplitRequest& request) {
  const io::File data = io::File::open_read(dir.file("data.h5"));
  const data::TokenSplit split = data::read_token_split(data, "test", request);
  std::vector<int64_t> index(kRows);
  std::iota(index.begin(), index.end(), int64_t{0});
  return train::gather_token_batch(split, index);
}

// The batch file: the batch the model read and what the library computed on it (reload.py's
// input).
void write_batch(const test::TempDir& dir, const std::string& name, const data::TokenBatch& batch, bool with_src,
                 bool with_tgt, const Tensor& logits, const Tensor& alignment = {}) {
  io::File f = io::File::create(dir.file(batch_file(name)));
  if (with_src) {
    f.write("/src", batch.src);
    f.write("/src_len", batch.src_len);
  }
  if (with_tgt) {
    f.write("/tgt", batch.tgt);
    f.write("/tgt_len", batch.tgt_len);
  }
  f.write("/logits", logits);
  if (alignment.defined() && !alignment.empty()) f.write("/alignment", alignment);
  f.commit();
}

// The model and batch files of the cases `names`.
std::vector<std::pair<std::string, std::string>> case_files(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& name : names) pairs.emplace_back(model_file(name), batch_file(name));
  return pairs;
}

// Runs reload.py once on the pairs of model and batch files (with `extra` arguments; one
// interpreter, since importing h5py and numpy takes half a second); returns its exit code and
// report, or -1 after reporting the case as skipped when Python, h5py or numpy is missing.
struct Reload {
  int code;
  std::string report;
};
Reload reload(const test::TempDir& dir, const std::vector<std::pair<std::string, std::string>>& pairs,
              const std::string& extra = "") {
  std::string line = python() + " '" ATTN_FORMATS_RELOAD_SCRIPT "'" + extra;
  for (const auto& [model, batch] : pairs) {   // appended piecewise: GCC 12 warns falsely (-Wrestrict) on " " + string
    line += ' ';
    line += model;
    line += ' ';
    line += batch;
  }
  const test::ShellResult r = test::run_shell(dir, line);
  if (r.code == 77 || r.code == 127) {
    test::skip_test("reload.py needs " + python() + " with h5py and numpy (python3-h5py, python3-numpy)");
    return {-1, ""};
  }
  return {r.code, r.out + r.err};
}

// reload.py must reproduce the library's numbers for every pair; returns its report ("" when
// skipped).
std::string check_reload(const test::TempDir& dir, const std::vector<std::pair<std::string, std::string>>& pairs) {
  const Reload r = reload(dir, pairs);
  if (r.code == -1) return "";
  std::cout << r.report;   // the measured differences, for whoever runs the binary by hand
  INFO(r.report);
  CHECK(r.code == 0);
  return r.report;
}
std::string check_reload(const test::TempDir& dir, const std::vector<std::string>& names) {
  return check_reload(dir, case_files(names));
}

// reload.py with `--break convention` must notice it on the pair (exit 1, MISMATCH).
void check_broken(const test::TempDir& dir, const std::pair<std::string, std::string>& pair, const std::string& broken) {
  const Reload r = reload(dir, {pair}, " --break " + broken);
  if (r.code == -1) return;
  INFO("--break " << broken << ": " << r.report);
  CHECK(r.code == 1);
  CHECK(r.report.find("MISMATCH") != std::string::npos);
}

// Trains a Transformer with `options`, then writes its logits on the test batch.
void transformer_case(const test::TempDir& dir, const std::string& name, const std::string& options) {
  train(dir, name, "attn-transformer", options);
  const transformer::TransformerFile m = transformer::load_transformer(dir.file(model_file(name)));
  const transformer::TransformerConfig& c = m.model.config();
  data::TokenBatch batch = test_batch(dir, transformer::transformer_request(c));
  if (c.arch == transformer::TransformerArch::mlm) {   // BERT masking, so that [MASK] ids are fed
    std::vector<int64_t> examples(kRows);
    std::iota(examples.begin(), examples.end(), int64_t{0});
    batch = transformer::mask_examples(batch, /*seed=*/5, examples, m.model.mask_token_id(), c.tgt_vocab,
                                  {.select = 0.5f, .replace_mask = 0.8f, .replace_random = 0.1f, .only = {}});
    int64_t masks = 0;
    for (int64_t i = 0; i < batch.src.numel(); ++i) masks += batch.src.idata()[i] == m.model.mask_token_id();
    REQUIRE(masks > 0);
  }
  write_batch(dir, name, batch, c.arch != transformer::TransformerArch::lm, c.arch != transformer::TransformerArch::mlm,
              m.model.logits(batch));
}

// Trains a seq2seq model with `options`, then writes its logits and alignment on the test batch.
void seq2seq_case(const test::TempDir& dir, const std::string& name, const std::string& options) {
  train(dir, name, "attn-seq2seq", options);
  const seq2seq::Seq2SeqFile m = seq2seq::load_seq2seq(dir.file(model_file(name)));
  const data::TokenBatch batch = test_batch(dir, seq2seq::seq2seq_request(m.model.config()));
  Tensor alignment;
  const Tensor logits = m.model.logits(batch, &alignment);
  write_batch(dir, name, batch, true, true, logits,
              m.model.config().attention == nn::ScoreKind::none ? Tensor() : alignment);
}


// A small random bAbI-layout data set (memnet.data.h5): 12 words, memories of up to 7 sentences
// of up to 5 words, so that the model's window (--memory-size 5) cuts some.
void write_qa_data(const test::TempDir& dir) {
  std::mt19937 gen(11);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  std::vector<std::string> words = data::Vocab().tokens();
  for (int w = 0; w < 12; ++w) words.push_back(std::string(1, 'w').append(std::to_string(w)));
  const data::Vocab vocab = data::Vocab::from_tokens(words);
  const int V = static_cast<int>(vocab.size());
  io::File f = io::File::create(dir.file("memnet.data.h5"));
  for (const auto& [split, n] : {std::pair{"train", 64}, std::pair{"valid", 8}, std::pair{"test", 24}}) {
    memnet::QaSplit s;
    s.story = Tensor({n, 7, 5}, DType::i32);
    s.story_len = Tensor({n}, DType::i32);
    s.question = Tensor({n, 3}, DType::i32);
    s.answer = Tensor({n}, DType::i32);
    s.support = Tensor::from_ints({n, 1}, std::vector<int32_t>(static_cast<size_t>(n), -1));
    s.task = Tensor::from_ints({n}, std::vector<int32_t>(static_cast<size_t>(n), 1));
    for (int i = 0; i < n; ++i) {
      s.story_len.idata()[i] = draw(1, 7);
      for (int k = 0; k < s.story_len.idata()[i]; ++k)
        for (int w = draw(1, 5) - 1; w >= 0; --w) s.story.all().idata()[(i * 7 + k) * 5 + w] = draw(4, V - 1);
      for (int w = draw(1, 3) - 1; w >= 0; --w) s.question.all().idata()[i * 3 + w] = draw(4, V - 1);
      s.answer.idata()[i] = draw(4, V - 1);
    }
    memnet::write_qa_split(f, split, s);
  }
  data::write_vocab(f, memnet::kQaVocab, vocab);
  f.commit();
}

// Trains a memory network with `options` on memnet.data.h5 (made once per dir), then writes its
// attention and predictions on the test split.
void memnet_case(const test::TempDir& dir, const std::string& name, const std::string& options) {
  if (!std::filesystem::exists(dir.file("memnet.data.h5"))) write_qa_data(dir);
  std::string line = "{memnet} train --data memnet.data.h5 --model ";   // appended piecewise (GCC 12, -Wrestrict)
  line += model_file(name);
  line += ' ';
  line += options;
  line += " --embedding-size 6 --hops 2 --memory-size 5 --batch-size 16 --steps 3 --lr 0.5 --seed 2 --threads 1 --quiet";
  const test::ShellResult r = test::run_tools(dir, line, {{"{memnet}", "attn-memnet"}});
  INFO(line << "\n" << r.err);
  REQUIRE(r.code == 0);
  const memnet::MemnetFile m = memnet::load_memnet(dir.file(model_file(name)));
  const io::File data = io::File::open_read(dir.file("memnet.data.h5"));
  const memnet::QaSplit test = memnet::read_qa_split(data, "test", m.vocab.size());
  std::vector<int64_t> index(static_cast<size_t>(test.size()));
  std::iota(index.begin(), index.end(), int64_t{0});
  const memnet::QaBatch batch = test.gather(index);
  REQUIRE(batch.story.dim(1) > 5);   // some memories are longer than the window
  const memnet::MemN2NResult a = m.model.answer(batch);
  io::File f = io::File::create(dir.file(batch_file(name)));
  f.write_all("/", {{"story", batch.story}, {"story_len", batch.story_len}, {"question", batch.question},
                    {"attention", a.attention}, {"predictions", a.predictions}});
  f.commit();
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

// ---- NTM -------------------------------------------------------------------------------------

// The copy task with 3 bits, sequences of 1 to 4 vectors: 8 training sequences, one batch of a
// step (--batch-size 8 --epoch-size 8), so that a step's gradient is the whole split's.
const char* kNtmData =
    "{data} copy --width 3 --min-len 1 --max-len 4 --n 8 --valid-n 4 --test-n 6 --seed 3 --quiet --out ntm.data.h5";
const char* kNtmSteps = " --batch-size 8 --epoch-size 8 --seed 2 --threads 1 --quiet";

// Runs attn-ntm `verb_and_options` in the dir, ntm.data.h5 made first unless there.
void ntm_tool(const test::TempDir& dir, const std::string& verb_and_options) {
  std::string line = "{ test -f ntm.data.h5 || ";   // appended piecewise (GCC 12, -Wrestrict)
  line += kNtmData;
  line += "; } && {ntm} ";
  line += verb_and_options;
  const test::ShellResult r = test::run_tools(dir, line, {{"{data}", "attn-data"}, {"{ntm}", "attn-ntm"}});
  INFO(line << "\n" << r.err);
  REQUIRE(r.code == 0);
}

// Trains an NTM with `options` (three Adam steps at 0.01, so that every weight moves), then runs
// it on the test split in batches of `run_batch` sequences: the run file is the case's batch
// file (its outputs, weightings and cost are what reload.py reproduces).
void ntm_case(const test::TempDir& dir, const std::string& name, const std::string& options, int run_batch = 4) {
  ntm_tool(dir, "train --data ntm.data.h5 --model " + model_file(name) + " " + options +
                    " --optimizer adam --lr 0.01 --steps 3" + kNtmSteps);
  ntm_tool(dir, "run --model " + model_file(name) + " --data ntm.data.h5 --split test --batch-size " +
                    std::to_string(run_batch) + " --out " + batch_file(name) + " --threads 1 --quiet");
}

// ---- captioner -------------------------------------------------------------------------------

// Scenes of 11 x 13 pixels: no pooling of 2 or 3 divides both sides. 32 training images, one
// batch of a step (--batch-size 32).
const char* kCaptionData =
    "{data} shapes --height 11 --width 13 --min-size 4 --max-size 5 --n 32 --valid-n 4 --test-n 6 --seed 3 --quiet "
    "--out caption.data.h5";
constexpr int64_t kCaptionMaxLen = 5;   // shorter than most captions: some end with EOS, some are cut

// Trains a captioner with `options` for `steps` Adam steps (so that it captions, and some
// captions end with EOS), captions the test split greedily with attn-caption, and writes the
// batch file: the split's images and captions, the library's teacher-forced logits [B, T, V]
// (decode_step fed BOS, tgt[0], ...) and attention [B, T, L] (evaluate), and attn-caption
// caption's /predictions, /predictions_len, /scores and /attention under /captions.
void caption_case(const test::TempDir& dir, const std::string& name, const std::string& options, int steps) {
  std::string line = "{ test -f caption.data.h5 || ";   // appended piecewise (GCC 12, -Wrestrict)
  line += kCaptionData;
  line += "; } && {cap} train --data caption.data.h5 --model " + model_file(name) + " " + options +
          " --embed-dim 6 --hidden 8 --attention-dim 5 --batch-size 32 --lr 0.03 --seed 2 --threads 1 --quiet"
          " --checkpoint-every 1 --keep-checkpoints 2 --steps " + std::to_string(steps);
  line += " && {cap} caption --model " + model_file(name) + " --data caption.data.h5 --split test --batch-size 4 "
          "--max-len " + std::to_string(kCaptionMaxLen) + " --threads 1 --quiet --out " + name + ".caps.h5";
  const test::ShellResult r = test::run_tools(dir, line, {{"{data}", "attn-data"}, {"{cap}", "attn-caption"}});
  INFO(line << "\n" << r.err);
  REQUIRE(r.code == 0);

  const caption::CaptionerFile m = caption::load_captioner(dir.file(model_file(name)));
  const io::File data = io::File::open_read(dir.file("caption.data.h5"));
  const caption::CaptionSplit split = caption::read_captioner_split(data, "test", m);
  std::vector<int64_t> index(static_cast<size_t>(split.size()));
  std::iota(index.begin(), index.end(), int64_t{0});
  const caption::CaptionBatch batch = caption::gather_caption_batch(split, index);
  const int64_t B = batch.tgt.dim(0), T = batch.tgt.dim(1), V = m.model.config().vocab;
  Tensor attention;
  m.model.evaluate(batch, &attention);
  Tensor logits({B, T, V});
  caption::CaptionerDecoderState state = m.model.start_decoding(batch.images);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int32_t> ids(static_cast<size_t>(B), data::kBos);
    for (int64_t b = 0; t > 0 && b < B; ++b) ids[static_cast<size_t>(b)] = batch.tgt.idata()[b * T + t - 1];
    const Tensor step = m.model.decode_step(Tensor::from_ints({B}, ids), state);
    for (int64_t b = 0; b < B; ++b) std::copy_n(step.data() + b * V, V, logits.data() + (b * T + t) * V);
  }
  const io::File caps = io::File::open_read(dir.file(name + ".caps.h5"));
  io::File f = io::File::create(dir.file(batch_file(name)));
  f.write_all("/", {{"images", batch.images}, {"tgt", batch.tgt}, {"tgt_len", batch.tgt_len}, {"logits", logits},
                    {"attention", attention}});
  for (const char* d : {"predictions", "predictions_len", "scores", "attention"})
    f.write(std::string("/captions/") + d, caps.read(std::string("/") + d));
  f.set_attr("/captions", "max_len", caps.attr_int("/config", "max_len"));
  f.commit();
}

// The checkpoint one step before a model trained with --checkpoint-every 1 (NAME.step<9 digits>.h5).
std::string step_file(const std::string& name, int step) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%09d", step);
  return name + ".model.step" + digits + ".h5";
}

}  // namespace

TEST_CASE("formats: numpy reloads a Transformer encdec (post-norm, sinusoidal, tied output) and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  transformer_case(dir, "encdec", "--arch encdec --norm post --pos-encoding sinusoidal --tie-embeddings output "
                                  "--d-model 16 --heads 4 --d-ff 24 --enc-layers 2 --dec-layers 1");
  check_reload(dir, {"encdec"});
}

TEST_CASE("formats: numpy reloads a Transformer lm (pre-norm, learned positions, untied) and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  transformer_case(dir, "lm", "--arch lm --norm pre --pos-encoding learned --tie-embeddings none --d-model 12 "
                              "--heads 3 --d-ff 20 --layers 2");
  check_reload(dir, {"lm"});
}

TEST_CASE("formats: numpy reloads a Transformer mlm ([MASK] inputs, self-attention window 2) and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  transformer_case(dir, "mlm", "--arch mlm --norm post --pos-encoding learned --tie-embeddings output "
                               "--attn-window 2 --d-model 8 --heads 2 --d-ff 16 --layers 1");
  check_reload(dir, {"mlm"});
}

TEST_CASE("formats: numpy reloads a seq2seq GRU, bidirectional, 2 layers, Bahdanau concat, and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  seq2seq_case(dir, "gru", "--cell gru --bidirectional --layers 2 --attention concat --attention-style bahdanau "
                           "--embed-dim 6 --hidden 5 --dec-hidden 7 --attention-dim 4");
  check_reload(dir, {"gru"});
}

TEST_CASE("formats: numpy reloads a seq2seq LSTM, Luong general, local-p, and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  seq2seq_case(dir, "lstm", "--cell lstm --attention general --attention-style luong --local predictive "
                            "--attention-window 2 --embed-dim 6 --hidden 5 --dec-hidden 7 --attention-dim 3");
  check_reload(dir, {"lstm"});
}

TEST_CASE("formats: numpy reloads seq2seq with dot local-m, location, scaled-dot, none and an LSTMN encoder",
          "[integration][formats]") {
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"dot_local_m", "--cell lstm --bidirectional --attention dot --attention-style luong --local monotonic "
                      "--attention-window 1 --embed-dim 6 --hidden 4"},
      {"location_lstmn", "--cell gru --bidirectional --layers 2 --encoder-self-attention --attention location "
                         "--max-src-len 9 --embed-dim 6 --hidden 5 --dec-hidden 7"},
      {"scaled_dot", "--cell gru --attention scaled-dot --attention-style luong --embed-dim 6 --hidden 5"},
      {"none_bahdanau", "--cell lstm --attention none --embed-dim 6 --hidden 5 --dec-hidden 7"},
      {"none_luong", "--cell gru --attention none --attention-style luong --embed-dim 6 --hidden 5 --dec-hidden 7"},
  };
  test::TempDir dir;
  std::vector<std::string> names;
  for (const auto& [name, options] : variants) {
    INFO("attn-seq2seq train " << options);
    seq2seq_case(dir, name, options);
    names.push_back(name);
  }
  check_reload(dir, names);
}

TEST_CASE("formats: numpy reloads a memnet (every encoding, adjacent and layerwise) and reproduces its attention",
          "[integration][formats]") {
  test::TempDir dir;
  memnet_case(dir, "mn_pe_adjacent", "--encoding position --tying adjacent");
  memnet_case(dir, "mn_bow_layerwise", "--encoding bow --tying layerwise --no-temporal-encoding");
  memnet_case(dir, "mn_pe_layerwise", "--encoding position --tying layerwise");
  memnet_case(dir, "mn_pef_adjacent", "--encoding position-fixed --empty-slots --tying adjacent");
  check_reload(dir, {"mn_pe_adjacent", "mn_bow_layerwise", "mn_pe_layerwise", "mn_pef_adjacent"});
}

TEST_CASE("formats: numpy reloads NTMs (LSTM and feed-forward controllers, several heads, every memory init) and "
          "reproduces attn-ntm run",
          "[integration][formats]") {
  test::TempDir dir;
  ntm_case(dir, "ntm_lstm", "--controller lstm --controller-layers 2 --controller-size 5 --memory 6,4 --read-heads 2 "
                            "--write-heads 2 --memory-init constant");
  ntm_case(dir, "ntm_ff", "--controller ff --controller-layers 2 --controller-size 5 --memory 7,3 --read-heads 1 "
                          "--write-heads 2 --shift-range 2 --memory-init learned");
  // random: the 6 test sequences run in batches of 4 and 2, each batch from the stream's start, so
  // that a sequence's M_0 depends on its place in its batch (FORMATS.md); 160 values a batch, of
  // which some lie outside [-1, 1] and are drawn again.
  ntm_case(dir, "ntm_random", "--controller lstm --controller-size 4 --memory 8,5 --read-heads 2 --write-heads 1 "
                              "--memory-init random", 4);
  ntm_case(dir, "ntm_baseline", "--baseline lstm --baseline-layers 2 --controller-size 4 --memory 6,4");
  const std::string report = check_reload(dir, {"ntm_lstm", "ntm_ff", "ntm_random", "ntm_baseline"});
  if (report.empty()) return;
  CHECK(report.find("memory_init random, M_0 drawn in batches of 4") != std::string::npos);
  CHECK(report.find("(0 values drawn again)") == std::string::npos);
}

TEST_CASE("formats: an NTM's SGD step is the documented objective's gradient, clipped by value, then by norm",
          "[integration][formats]") {
  test::TempDir dir;
  const std::string model = "--controller lstm --controller-size 4 --memory 5,3 --read-heads 1 --write-heads 2 "
                            "--memory-init learned";
  // Two plain SGD steps at rate 1 (each over the whole training split), then a third, resumed,
  // with clipping to [-0.01, 0.01] and then to norm 0.02, both below the gradient's.
  ntm_tool(dir, "train --data ntm.data.h5 --model ntm_sgd.model.h5 " + model +
                    " --optimizer sgd --lr 1 --clip-value 0 --steps 2 --checkpoint-every 1" + kNtmSteps);
  ntm_tool(dir, "train --data ntm.data.h5 --model ntm_clip.model.h5 --resume ntm_sgd.model.h5 --optimizer sgd --lr 1 "
                "--clip-value 0.01 --clip 0.02 --steps 3" + std::string(kNtmSteps));
  const std::pair<std::string, std::string> plain{step_file("ntm_sgd", 1), "ntm_sgd.model.h5"};
  const std::pair<std::string, std::string> clipped{"ntm_sgd.model.h5", "ntm_clip.model.h5"};
  const std::string report = check_reload(dir, {plain, clipped});
  if (report.empty()) return;
  CHECK(report.find("no clipping") != std::string::npos);      // the first step
  CHECK(report.find("scaled to 0.02") != std::string::npos);    // the clipped step: both rules acted
  CHECK(report.find(" 0 entries clamped") == std::string::npos);
  check_broken(dir, plain, "ntm-loss-bits");      // the objective in bits, not nats
  check_broken(dir, clipped, "clip-norm-first");  // the norm clipped before the values
}

TEST_CASE("formats: numpy reloads captioners (batch norm, coordinates, mean ablation, grids not a multiple of the "
          "pooling) and reproduces their logits, attention and greedy captions",
          "[integration][formats]") {
  test::TempDir dir;
  // 11 x 13 images: conv4x3,pool2 leaves 5 x 6 (the last row and column dropped), pool3 3 x 4;
  // conv6x2, an even kernel, grows the grid by one (padding 1 on every side).
  caption_case(dir, "cap_bn_coords", "--encoder conv4x3,pool2,conv5x3 --batch-norm --coords", 30);
  caption_case(dir, "cap_plain", "--encoder conv4x3,pool2,conv6x2 --no-gate", 30);
  caption_case(dir, "cap_mean", "--encoder conv4x3,pool3 --attention mean --coords", 30);
  const std::vector<std::string> names = {"cap_bn_coords", "cap_plain", "cap_mean"};
  // Captions that end with EOS (whose score holds its log-probability) and captions cut at --max-len.
  int64_t ended = 0, cut = 0;
  for (const std::string& name : names) {
    const Tensor len = io::File::open_read(dir.file(name + ".caps.h5")).read("/predictions_len");
    for (int64_t i = 0; i < len.numel(); ++i) (len.idata()[i] < kCaptionMaxLen ? ended : cut) += 1;
  }
  CHECK(ended > 0);
  CHECK(cut > 0);
  // The last step's running statistics of batch normalisation, from the checkpoint before it.
  std::vector<std::pair<std::string, std::string>> pairs = case_files(names);
  pairs.emplace_back(step_file("cap_bn_coords", 29), model_file("cap_bn_coords"));
  if (check_reload(dir, pairs).empty()) return;
  for (const char* broken : {"coords-centres", "bn-batch-statistics", "scores-without-eos"})
    check_broken(dir, case_files({"cap_bn_coords"})[0], broken);
  check_broken(dir, pairs.back(), "bn-biased-variance");
}

TEST_CASE("formats: reload.py notices a wrong convention (GRU gates r and z swapped, sinusoids in halves)",
          "[integration][formats]") {
  test::TempDir dir;
  seq2seq_case(dir, "gru", "--cell gru --attention concat --embed-dim 6 --hidden 5");
  transformer_case(dir, "encdec", "--arch encdec --pos-encoding sinusoidal --d-model 8 --heads 2 --d-ff 16 --layers 1");
  check_broken(dir, case_files({"gru"})[0], "gru-gates");
  check_broken(dir, case_files({"encdec"})[0], "sinusoid-halves");
}

TEST_CASE("formats: numpy reloads fine-tuned Transformer classifiers (lm and mlm bodies, sentence pairs and single "
          "sentences) and reproduces their class logits and attn-transformer classify",
          "[integration][formats]") {
  test::TempDir dir;
  // GPT: an lm pre-trained on text (pre-norm, learned positions, its own output layer, which only
  // the auxiliary LM loss reads); BERT: an mlm pre-trained on the pairs themselves, so that both
  // segment rows are trained (post-norm, sinusoids, tied output, a self-attention window).
  classifier_case(dir, "cls_lm", "--arch lm --data text.h5 --norm pre --pos-encoding learned --tie-embeddings none "
                                 "--d-model 12 --heads 3 --d-ff 20 --layers 2", " --aux-lm 0.5");
  classifier_case(dir, "cls_mlm", "--arch mlm --data pairs.h5 --norm post --pos-encoding sinusoidal "
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

TEST_CASE("formats: reload.py reloads every model kind of every family of the registry", "[integration][formats]") {
  // reload.py --kinds lists the root kinds it has a reader for (its table of checks): a family
  // added to cmake/Families.cmake, or a kind added to a family, fails here until reload.py (and
  // a case above) learns its files.
  test::TempDir dir;
  const Reload r = reload(dir, {}, " --kinds");
  if (r.code == -1) return;
  INFO(r.report);
  REQUIRE(r.code == 0);
  std::set<std::string> kinds;
  std::istringstream lines(r.report);
  for (std::string kind; std::getline(lines, kind);)
    if (!kind.empty()) kinds.insert(kind);
  REQUIRE_FALSE(families::all().empty());
  for (const families::Family& family : families::all()) {
    INFO("family " << family.name);
    CHECK_FALSE(family.model_kinds.empty());
    for (const std::string& kind : family.model_kinds) {
      INFO("model kind " << kind);
      CHECK(kinds.count(kind) == 1);
    }
  }
  for (const std::string& kind : kinds) {   // and no kind that no family writes
    INFO("reload.py lists " << kind);
    CHECK(families::of_model_kind(kind) != nullptr);
  }
}

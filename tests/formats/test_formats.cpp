// The model files can be read without attnlab (docs/FORMATS.md): for each model, the real tool
// trains it a few steps on a tiny generated data set (so that no weight is at its initial value),
// the library reloads the file and computes teacher-forced logits on a fixed batch, and
// tests/formats/reload.py, which imports only h5py and numpy, rebuilds the model from the file's
// /config and /params following FORMATS.md and must reproduce those logits (and, for seq2seq, the
// attention weights) to 1e-4; for a memory network, trained on a small random bAbI-layout data
// set, every hop's attention to 1e-4 and the predicted answers exactly. $PYTHON (default /usr/bin/python3) runs the script; without it, or
// without h5py or numpy, the cases are reported as skipped.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attn/io/hdf5_file.hpp"
#include "attn/data/token_batch.hpp"
#include "attn/families/transformer/model.hpp"
#include "attn/families/seq2seq/run.hpp"
#include "attn/families/memnet/qa_data.hpp"
#include "attn/data/token_data.hpp"
#include "attn/families/memnet/run.hpp"
#include "attn/train/token_run.hpp"
#include "attn/families/transformer/run.hpp"
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

// Runs reload.py once on the model and batch files of the cases `names` (with `extra`
// arguments; one interpreter, since importing h5py and numpy takes half a second); returns its
// exit code and report, or -1 after reporting the case as skipped when Python, h5py or numpy is
// missing.
struct Reload {
  int code;
  std::string report;
};
Reload reload(const test::TempDir& dir, const std::vector<std::string>& names, const std::string& extra = "") {
  std::string line = python() + " '" ATTN_FORMATS_RELOAD_SCRIPT "'" + extra;
  for (const std::string& name : names) {   // appended piecewise: GCC 12 warns falsely (-Wrestrict) on " " + string
    line += ' ';
    line += model_file(name);
    line += ' ';
    line += batch_file(name);
  }
  const test::ShellResult r = test::run_shell(dir, line);
  if (r.code == 77 || r.code == 127) {
    test::skip_test("reload.py needs " + python() + " with h5py and numpy (python3-h5py, python3-numpy)");
    return {-1, ""};
  }
  return {r.code, r.out + r.err};
}

// reload.py must reproduce the library's numbers for every case of `names`.
void check_reload(const test::TempDir& dir, const std::vector<std::string>& names) {
  const Reload r = reload(dir, names);
  if (r.code == -1) return;
  std::cout << r.report;   // the measured differences, for whoever runs the binary by hand
  INFO(r.report);
  CHECK(r.code == 0);
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

TEST_CASE("formats: reload.py notices a wrong convention (GRU gates r and z swapped, sinusoids in halves)",
          "[integration][formats]") {
  test::TempDir dir;
  seq2seq_case(dir, "gru", "--cell gru --attention concat --embed-dim 6 --hidden 5");
  transformer_case(dir, "encdec", "--arch encdec --pos-encoding sinusoidal --d-model 8 --heads 2 --d-ff 16 --layers 1");
  for (const auto& [name, broken] : {std::pair{"gru", "gru-gates"}, std::pair{"encdec", "sinusoid-halves"}}) {
    const Reload r = reload(dir, {name}, std::string(" --break ") + broken);
    if (r.code == -1) return;
    INFO(r.report);
    CHECK(r.code == 1);
    CHECK(r.report.find("MISMATCH") != std::string::npos);
  }
}

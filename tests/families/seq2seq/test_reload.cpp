// Seq2seq model files read without attnlab (docs/FORMATS.md, "Checking a reader"): the real tool
// trains each model a few steps on a tiny generated data set (so that no weight is at its initial
// value), the library reloads the file and computes teacher-forced logits and attention weights
// on a fixed batch, and tests/formats/reload.py, which imports only h5py and numpy, rebuilds the
// model from the file's /config and /params with this family's module
// tests/families/seq2seq/reload.py and must reproduce both to 1e-4, for every cell, score, style
// and local variant; GRU gates r and z swapped must be noticed. The shared steps are in
// tests/support/reload_support.hpp; the cases are "formats: ..." in CTest.
#include <string>
#include <utility>
#include <vector>

#include "attn/data/token_batch.hpp"
#include "attn/families/seq2seq/run.hpp"
#include "reload_support.hpp"
#include "test_support.hpp"

using namespace attn;
using test::case_files;
using test::check_broken;
using test::check_reload;
using test::model_file;

namespace {

// Trains a seq2seq model with `options`, then writes its logits and alignment on the test batch.
void seq2seq_case(const test::TempDir& dir, const std::string& name, const std::string& options) {
  test::train_token_model(dir, name, "attn-seq2seq", options);
  const seq2seq::Seq2SeqFile m = seq2seq::load_seq2seq(dir.file(model_file(name)));
  const data::TokenBatch batch = test::token_test_batch(dir, seq2seq::seq2seq_request(m.model.config()));
  Tensor alignment;
  const Tensor logits = m.model.logits(batch, &alignment);
  test::write_token_batch(dir, name, batch, true, true, logits,
                          m.model.config().attention == nn::ScoreKind::none ? Tensor() : alignment);
}

}  // namespace

TEST_CASE("formats: numpy reloads a seq2seq GRU, bidirectional, 2 layers, Bahdanau concat, and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  seq2seq_case(dir, "gru",
               "--cell gru --bidirectional --layers 2 --attention concat --attention-style bahdanau "
               "--embed-dim 6 --hidden 5 --dec-hidden 7 --attention-dim 4");
  check_reload(dir, {"gru"});
}

TEST_CASE("formats: numpy reloads a seq2seq LSTM, Luong general, local-p, and reproduces its logits",
          "[integration][formats]") {
  test::TempDir dir;
  seq2seq_case(dir, "lstm",
               "--cell lstm --attention general --attention-style luong --local predictive "
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

TEST_CASE("formats: reload.py notices a wrong convention (GRU gates r and z swapped)", "[integration][formats]") {
  test::TempDir dir;
  seq2seq_case(dir, "gru", "--cell gru --attention concat --embed-dim 6 --hidden 5");
  check_broken(dir, case_files({"gru"})[0], "gru-gates");
}

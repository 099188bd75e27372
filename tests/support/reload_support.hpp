// Model files read without attnlab (docs/FORMATS.md, "Checking a reader"): what every family's
// reload cases (tests/families/<family>/test_reload.cpp, "formats: ..." in CTest) share. A case
// trains a tiny model with the real tool, computes the library's outputs on a batch through the C++
// API, writes them to a batch file, and runs tests/formats/reload.py on the model and batch files;
// the script rebuilds the model with h5py and numpy alone, through the family's module
// tests/families/<family>/reload.py. $PYTHON (default /usr/bin/python3) runs the script; without
// it, or without h5py or numpy, the cases are reported as skipped.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/data/token_batch.hpp"
#include "attn/data/token_data.hpp"
#include "test_support.hpp"

namespace attn::test {

// tests/formats/reload.py in the source tree, and the interpreter that runs it ($PYTHON, default
// /usr/bin/python3).
std::string reload_script();
std::string reload_python();

// A case's files in its TempDir: <name>.model.h5 and <name>.batch.h5; the checkpoint of a model
// trained with --checkpoint-every 1 at `step` (<name>.model.step<9 digits>.h5).
std::string model_file(const std::string& name);
std::string batch_file(const std::string& name);
std::string step_file(const std::string& name, int step);
// The model and batch files of the cases `names`.
std::vector<std::pair<std::string, std::string>> case_files(const std::vector<std::string>& names);

// Runs reload.py once on the pairs of model and batch files (with `extra` arguments; one
// interpreter, since importing h5py and numpy takes half a second); returns its exit code and
// report, or -1 after reporting the case as skipped when Python, h5py or numpy is missing.
struct Reload {
  int code;
  std::string report;
};
Reload reload(const TempDir& dir, const std::vector<std::pair<std::string, std::string>>& pairs,
              const std::string& extra = "");

// reload.py must reproduce the library's numbers for every pair; returns its report ("" when
// skipped).
std::string check_reload(const TempDir& dir, const std::vector<std::pair<std::string, std::string>>& pairs);
std::string check_reload(const TempDir& dir, const std::vector<std::string>& names);

// reload.py with `--break convention` must notice it on the pair (exit 1, MISMATCH).
void check_broken(const TempDir& dir, const std::pair<std::string, std::string>& pair, const std::string& broken);

// ---- token models (transformer, seq2seq): the reverse task -------------------------------------

constexpr int64_t kReloadRows = 6;   // the batch: the first rows of the test split

// Makes data.h5 (unless there: examples of varied lengths, 2..7 source tokens, so that every
// batch is padded) and trains `tool` into the model file of `name`: three Adam steps at a constant
// rate of 0.01, which move every weight (biases and norms included) off its initial value.
// `tail` is appended to the command line (the tool's own options for that).
void train_token_model(const TempDir& dir, const std::string& name, const std::string& tool,
                       const std::string& model_options, const std::string& tail = "");

// The first kReloadRows examples of the test split of data.h5, as `request` reads them.
data::TokenBatch token_test_batch(const TempDir& dir, const data::TokenSplitRequest& request);

// The batch file of `name`: the batch the model read and what the library computed on it
// (reload.py's input).
void write_token_batch(const TempDir& dir, const std::string& name, const data::TokenBatch& batch, bool with_src,
                       bool with_tgt, const Tensor& logits, const Tensor& alignment = {});

}  // namespace attn::test

#include "reload_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <numeric>

#include "attn/io/hdf5_file.hpp"
#include "attn/train/token_run.hpp"

namespace attn::test {
namespace {

// Examples of varied lengths (2..7 source tokens), so that every batch is padded.
const char* kData =
    "{data} reverse --vocab 12 --min-len 2 --max-len 7 --n 200 --valid-n 20 --test-n 20 --seed 3 --quiet "
    "--out data.h5";
// Three Adam steps at a constant rate of 0.01 move every weight (biases and norms included) off
// its initial value.
const char* kSteps = " --steps 3 --max-tokens 96 --lr 0.01 --seed 2 --threads 1 --quiet --data data.h5";

}  // namespace

std::string reload_script() { return ATTN_TESTS_DIR "/formats/reload.py"; }

std::string reload_python() {
  const char* env = std::getenv("PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

std::string model_file(const std::string& name) { return name + ".model.h5"; }
std::string batch_file(const std::string& name) { return name + ".batch.h5"; }

std::string step_file(const std::string& name, int step) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%09d", step);
  return name + ".model.step" + digits + ".h5";
}

std::vector<std::pair<std::string, std::string>> case_files(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& name : names) pairs.emplace_back(model_file(name), batch_file(name));
  return pairs;
}

Reload reload(const TempDir& dir, const std::vector<std::pair<std::string, std::string>>& pairs,
              const std::string& extra) {
  std::string line = reload_python() + " '" + reload_script() + "'" + extra;
  for (const auto& [model, batch] : pairs) {   // appended piecewise: GCC 12 warns falsely (-Wrestrict) on " " + string
    line += ' ';
    line += model;
    line += ' ';
    line += batch;
  }
  const ShellResult r = run_shell(dir, line);
  if (r.code == 77 || r.code == 127) {
    skip_test("reload.py needs " + reload_python() + " with h5py and numpy (python3-h5py, python3-numpy)");
    return {-1, ""};
  }
  return {r.code, r.out + r.err};
}

std::string check_reload(const TempDir& dir, const std::vector<std::pair<std::string, std::string>>& pairs) {
  const Reload r = reload(dir, pairs);
  if (r.code == -1) return "";
  std::cout << r.report;   // the measured differences, for whoever runs the binary by hand
  INFO(r.report);
  CHECK(r.code == 0);
  return r.report;
}
std::string check_reload(const TempDir& dir, const std::vector<std::string>& names) {
  return check_reload(dir, case_files(names));
}

void check_broken(const TempDir& dir, const std::pair<std::string, std::string>& pair, const std::string& broken) {
  const Reload r = reload(dir, {pair}, " --break " + broken);
  if (r.code == -1) return;
  INFO("--break " << broken << ": " << r.report);
  CHECK(r.code == 1);
  CHECK(r.report.find("MISMATCH") != std::string::npos);
}

// ---- token models ------------------------------------------------------------------------------

void train_token_model(const TempDir& dir, const std::string& name, const std::string& tool,
                       const std::string& model_options, const std::string& tail) {
  const std::string line = "{ test -f data.h5 || " + std::string(kData) + "; } && {tool} train " + model_options +
                           kSteps + " --model " + model_file(name) + tail;
  const ShellResult r = run_tools(dir, line, {{"{data}", "attn-data"}, {"{tool}", tool}});
  INFO(line << "\n" << r.err);
  REQUIRE(r.code == 0);
}

data::TokenBatch token_test_batch(const TempDir& dir, const data::TokenSplitRequest& request) {
  const io::File data = io::File::open_read(dir.file("data.h5"));
  const data::TokenSplit split = data::read_token_split(data, "test", request);
  std::vector<int64_t> index(kReloadRows);
  std::iota(index.begin(), index.end(), int64_t{0});
  return train::gather_token_batch(split, index);
}

void write_token_batch(const TempDir& dir, const std::string& name, const data::TokenBatch& batch, bool with_src,
                       bool with_tgt, const Tensor& logits, const Tensor& alignment) {
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

}  // namespace attn::test

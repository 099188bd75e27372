// Helpers shared by the Catch2 tests: random inputs, finite-difference gradients, tensor
// comparison with a readable failure, temporary folders, and the shared data folder.
#pragma once
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/param.hpp"

namespace attn::test {

// sum(r * y) in double: with loss = dot(r, f(x)), dloss/df = r.
double dot(const Tensor& r, const Tensor& y);

// Central-difference gradient of `loss` with respect to every element of `x` (perturbed in
// place and restored). eps is relative to max(1, |x_i|).
Tensor numeric_grad(const std::function<double()>& loss, Tensor& x, double eps = 1e-3);

// A whole model's gradient, sampled: for every parameter, `samples` entries (all of them when it
// has no more; else drawn from `pick`) are moved by +-eps and the central difference of `loss`
// CHECKed against the gradient the model accumulated in p->grad:
// |analytic - numeric| <= abs_tol + rel_tol |numeric|.
struct SampledGrads {
  int64_t samples = 6;
  double eps = 2e-3;
  double abs_tol = 2e-3;
  double rel_tol = 2e-2;
};
void check_sampled_grads(const ParamList& params, const std::function<double()>& loss, Rng& pick,
                         const SampledGrads& o = {});

// Catch2 matcher: |actual - expected| <= tol * (1 + |expected|) element by element; on failure
// it reports the shapes, the worst element and both values.
class CloseTo : public Catch::MatcherBase<Tensor> {
 public:
  CloseTo(Tensor expected, double tol) : expected_(std::move(expected)), tol_(tol) {}
  bool match(const Tensor& actual) const override;
  std::string describe() const override;

 private:
  Tensor expected_;
  double tol_;
  mutable std::string detail_;
};
inline CloseTo close_to(const Tensor& expected, double tol = 1e-2) { return {expected, tol}; }

// A fresh empty folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The whole content of a file (e.g. a captured output stream); empty if it cannot be read.
std::string slurp(const std::string& path);
// Writes `text` as the whole content of a file (REQUIREs that it could).
void write_text(const std::string& path, const std::string& text);

// The built tool $ATTN_BIN_DIR/<name> in single quotes, for a shell command line. FAILs the
// test when ATTN_BIN_DIR is unset (tests run through ctest set it) or the tool is not built.
std::string quoted_tool(const std::string& name);

// Runs a shell command line in `dir` (pipes and redirections work), capturing stdout and stderr
// in dir/stdout.txt and dir/stderr.txt; returns the exit code (-1 if killed) and both streams.
struct ShellResult {
  int code;
  std::string out, err;
};
ShellResult run_shell(const TempDir& dir, const std::string& command);
// run_shell with every "{key}" of `tools` replaced by quoted_tool(name), so that a command line
// reads like the user's: run_tools(dir, "{data} copy --out - | {tf} ...", {{"{data}", "attn-data"}}).
ShellResult run_tools(const TempDir& dir, std::string command,
                      const std::vector<std::pair<std::string, std::string>>& tools);

// Whether two model files hold the same /params: the same names, shapes and bits (false when
// either has none).
bool same_params(const std::string& a_path, const std::string& b_path);

// The shared real data folder: $ATTN_DATA_DIR, else the configured default. Returns an empty
// path when absent; tests then call skip_test(), which CTest reports as skipped.
std::filesystem::path data_dir();
// Prints the marker that CTest's SKIP_REGULAR_EXPRESSION turns into "skipped".
void skip_test(const std::string& why);

}  // namespace attn::test

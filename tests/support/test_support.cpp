#include "test_support.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "attn/io/hdf5_file.hpp"

namespace attn::test {

double dot(const Tensor& r, const Tensor& y) {
  check_shape(y.shape(), r.shape(), "dot: y");
  double acc = 0;
  for (int64_t i = 0; i < r.numel(); ++i) acc += static_cast<double>(r.at(i)) * y.at(i);
  return acc;
}

Tensor numeric_grad(const std::function<double()>& loss, Tensor& x, double eps) {
  Tensor g = zeros_like(x);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float orig = x.at(i);
    const double h = eps * std::max(1.0, std::fabs(static_cast<double>(orig)));
    x.at(i) = static_cast<float>(orig + h);
    const double hi = (static_cast<double>(x.at(i)) - orig);   // the step actually taken
    const double up = loss();
    x.at(i) = static_cast<float>(orig - h);
    const double lo = (orig - static_cast<double>(x.at(i)));
    const double down = loss();
    x.at(i) = orig;
    g.at(i) = static_cast<float>((up - down) / (hi + lo));
  }
  return g;
}

void check_sampled_grads(const ParamList& params, const std::function<double()>& loss, Rng& pick,
                         const SampledGrads& o) {
  for (Param* p : params) {
    INFO("param " << p->name);
    const int64_t n = p->value.numel();
    const int64_t samples = std::min(n, o.samples);
    for (int64_t s = 0; s < samples; ++s) {
      const int64_t i = samples == n ? s : pick.uniform_int(n);
      const float saved = p->value.at(i);
      p->value.at(i) = static_cast<float>(saved + o.eps);
      const double up = loss(), hi = static_cast<double>(p->value.at(i)) - saved;   // the steps actually taken
      p->value.at(i) = static_cast<float>(saved - o.eps);
      const double down = loss(), lo = saved - static_cast<double>(p->value.at(i));
      p->value.at(i) = saved;
      const double numeric = (up - down) / (hi + lo), analytic = p->grad.at(i);
      INFO("entry " << i << ": analytic " << analytic << ", numeric " << numeric);
      CHECK(std::abs(analytic - numeric) <= o.abs_tol + o.rel_tol * std::abs(numeric));
    }
  }
}

bool CloseTo::match(const Tensor& actual) const {
  if (actual.shape() != expected_.shape()) {
    detail_ = "shape " + to_string(actual.shape()) + " vs expected " + to_string(expected_.shape());
    return false;
  }
  double worst = -1;
  int64_t at = -1;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.at(i), e = expected_.at(i);
    const double excess = std::fabs(a - e) - tol_ * (1.0 + std::fabs(e));
    if (!(excess <= 0) && (at < 0 || !(excess <= worst))) { worst = excess; at = i; }
  }
  if (at < 0) return true;
  std::ostringstream os;
  os << "element " << at << " of " << to_string(actual.shape()) << " is " << actual.at(at)
     << ", expected " << expected_.at(at);
  detail_ = os.str();
  return false;
}

std::string CloseTo::describe() const {
  std::ostringstream os;
  os << "is close to expected (tol " << tol_ << ")";
  if (!detail_.empty()) os << ": " << detail_;
  return os.str();
}

TempDir::TempDir() {
  static int serial = 0;
  const auto base = std::filesystem::temp_directory_path();
  for (;;) {
    path_ = base / ("attn-test-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
    if (std::filesystem::create_directory(path_)) break;
  }
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

std::string quoted_tool(const std::string& name) {
  const char* dir = std::getenv("ATTN_BIN_DIR");
  if (!dir || !*dir) FAIL("ATTN_BIN_DIR is not set: run the tests through ctest");
  const std::string exe = std::string(dir) + "/" + name;
  if (!std::filesystem::exists(exe)) FAIL("no executable " << exe << ": build the " << name << " target");
  std::string q(1, '\'');   // built with += : GCC 12 warns falsely (-Wrestrict) on "'" + string
  q += exe;
  q += '\'';
  return q;
}

ShellResult run_shell(const TempDir& dir, const std::string& command) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  std::string full = "cd '";
  full += dir.path().string();
  full += "' && (" + command + ") >'" + out + "' 2>'" + err + "'";
  const int status = std::system(full.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

ShellResult run_tools(const TempDir& dir, std::string command,
                      const std::vector<std::pair<std::string, std::string>>& tools) {
  for (const auto& [key, name] : tools)
    for (size_t at; (at = command.find(key)) != std::string::npos;) command.replace(at, key.size(), quoted_tool(name));
  return run_shell(dir, command);
}

bool same_params(const std::string& a_path, const std::string& b_path) {
  const io::File a = io::File::open_read(a_path), b = io::File::open_read(b_path);
  const auto names = a.list_datasets("/params");
  if (names.empty() || names != b.list_datasets("/params")) return false;
  for (const auto& name : names) {
    const Tensor x = a.read("/params/" + name), y = b.read("/params/" + name);
    if (x.shape() != y.shape() || std::memcmp(x.data(), y.data(), static_cast<size_t>(x.numel()) * 4) != 0)
      return false;
  }
  return true;
}

std::filesystem::path data_dir() {
  const char* env = std::getenv("ATTN_DATA_DIR");
  std::filesystem::path p = env && *env ? env : ATTN_DEFAULT_DATA_DIR;
  return std::filesystem::is_directory(p) ? p : std::filesystem::path();
}

void skip_test(const std::string& why) { std::cout << "ATTN-TEST-SKIPPED: " << why << std::endl; }

}  // namespace attn::test

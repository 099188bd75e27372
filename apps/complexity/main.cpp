// attn-complexity: measures self-attention, recurrent and convolutional layers as n and d grow
// and reproduces the complexity table of Vaswani et al. (2017, Table 1). The measuring is
// lib/complexity's; this file only turns flags into a StudyConfig and writes the results.
#include <iostream>
#include <sstream>

#include "attn/complexity/study.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"

namespace {

using namespace attn;
using namespace attn::complexity;
namespace po = boost::program_options;

constexpr const char* kTool = "attn-complexity";

std::vector<int64_t> powers_of_two(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t x = lo; x <= hi; x *= 2) v.push_back(x);
  return v;
}

// Sizes are powers of two: --n-min 16 --n-max 4096 is 16, 32, ..., 4096.
void require_power_of_two(const cli::Options& opts, const std::string& flag) {
  if (!opts.has(flag)) return;
  const int64_t v = opts.get<int64_t>(flag);
  if (v < 1 || (v & (v - 1)) != 0)
    throw ConfigError("--" + flag + " must be a power of 2, got " + std::to_string(v));
}

// The base configuration (standard or --quick) with every flag the user gave applied.
StudyConfig config_from(const cli::Options& opts) {
  StudyConfig c = opts.get<bool>("quick") ? StudyConfig::quick() : StudyConfig::standard();
  for (const char* flag : {"n-min", "n-max", "d-min", "d-max", "path-n-max"}) require_power_of_two(opts, flag);
  auto sweep = [&](std::vector<int64_t>& values, const char* lo, const char* hi) {
    const int64_t a = opts.has(lo) ? opts.get<int64_t>(lo) : values.front();
    const int64_t b = opts.has(hi) ? opts.get<int64_t>(hi) : values.back();
    if (b < a) throw ConfigError(std::string("--") + hi + " must be >= --" + lo + " (" + std::to_string(a) + "), got " + std::to_string(b));
    values = powers_of_two(a, b);
  };
  sweep(c.n_values, "n-min", "n-max");
  sweep(c.d_values, "d-min", "d-max");
  if (opts.has("path-n-max")) {
    const int64_t m = opts.get<int64_t>("path-n-max");
    c.path_n_values = m < c.path_n_values.front() ? std::vector<int64_t>{} : powers_of_two(c.path_n_values.front(), m);
  }
  auto set = [&](int64_t& field, const char* flag) {
    if (opts.has(flag)) field = opts.get<int64_t>(flag);
  };
  set(c.d, "d");
  set(c.n_for_d_sweep, "n-for-d");
  set(c.path_d, "path-d");
  set(c.k, "k");
  set(c.r, "r");
  set(c.heads, "heads");
  if (opts.has("repeats")) c.repeats = static_cast<int>(opts.get<int64_t>("repeats"));
  c.seed = static_cast<uint64_t>(opts.get<int64_t>("seed"));
  if (opts.has("layers")) {
    c.layers.clear();
    std::stringstream names(opts.get<std::string>("layers"));
    for (std::string name; std::getline(names, name, ',');) c.layers.push_back(parse_layer(name));
  }
  c.validate();
  return c;
}

int64_t points_of(const StudyConfig& c) {
  return static_cast<int64_t>(c.layers.size() * (c.n_values.size() + c.d_values.size() + c.path_n_values.size()));
}

int cmd_measure(int argc, char** argv) {
  cli::Options opts(kTool, "--out FILE [options]",
                    "Measures every layer type over a sweep of n (at width --d) and of d (at length --n-for-d):\n"
                    "multiply-adds and sequential steps counted by the library, median wall time, activation\n"
                    "bytes, and the maximum path length probed on stacked layers (at width --path-d). Prints\n"
                    "Table 1 of Vaswani et al. (2017) with the fitted exponents beside the theory, and where\n"
                    "self-attention stops being cheaper than a recurrent layer; writes every number to --out.\n"
                    "Sizes are powers of 2. Defaults: n 16..4096 at d 512, d 32..1024 at n 512, path n\n"
                    "16..1024 at d 8, k 3, r 16, 8 heads, 3 repeats (--quick: n 32..256 at d 64, d 16..64 at\n"
                    "n 64, path n 16..64, r 4, 4 heads, 1 repeat).");
  opts.out("output HDF5 file (kind complexity)").seed().threads();
  auto size = [] { return po::value<int64_t>()->value_name("N"); };
  // clang-format off
  opts.add()
      ("quick", po::bool_switch(), "a small sweep that runs in about a second (tests, smoke runs)")
      ("layers", po::value<std::string>()->value_name("LIST"),
       "comma-separated layers (default all): self_attention, restricted_attention, multi_head_attention, "
       "lstm, gru, conv, dilated_conv")
      ("n-min", size(), "shortest sequence of the n sweep")
      ("n-max", size(), "longest sequence of the n sweep")
      ("d", size()->notifier(cli::positive<int64_t>("d")), "width during the n sweep")
      ("d-min", size(), "narrowest width of the d sweep")
      ("d-max", size(), "widest width of the d sweep")
      ("n-for-d", size()->notifier(cli::positive<int64_t>("n-for-d")), "sequence length during the d sweep")
      ("path-n-max", size(), "longest sequence of the path probe (from 16; below 16: no probe)")
      ("path-d", size()->notifier(cli::positive<int64_t>("path-d")), "width during the path probe")
      ("k", size()->notifier(cli::at_least<int64_t>("k", 2)), "convolution kernel width")
      ("r", size()->notifier(cli::positive<int64_t>("r")), "restricted attention window radius")
      ("heads", size()->notifier(cli::positive<int64_t>("heads")), "multi-head attention heads")
      ("repeats", size()->notifier(cli::in_range<int64_t>("repeats", 1, 1000)), "timed runs per point (median)");
  // clang-format on
  if (!opts.parse(argc, argv)) return 0;
  const StudyConfig config = config_from(opts);

  cli::ProgressOptions shown;
  shown.label = "point";
  shown.quiet = opts.quiet();
  cli::Progress progress(points_of(config), shown);
  int64_t done = 0;
  const StudyReport report = run_study(config, [&](const std::string&) { progress.update(++done); });
  progress.finish();

  cli::write_output(opts, "attnlab/output", "complexity", [&](io::File& file) { write_study(file, report); });
  // The table is the result: stdout, unless the HDF5 file goes there.
  const std::string table = format_table(report);
  if (opts.get<std::string>("out") == "-") {
    if (!opts.quiet()) std::cerr << table;
  } else {
    std::cout << table;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return attn::cli::dispatch(kTool, argc, argv, {
      {"measure", cmd_measure, "measure attention, recurrent and convolutional layers; print and write Table 1"},
  });
}

// Options and reporting shared by the attn-data generators.
#include <string>

#include "verbs.hpp"

namespace attn::data_tool {

void add_generator_options(cli::Options& opts, int64_t default_n, int64_t default_eval_n) {
  opts.out("output HDF5 file").seed();
  // clang-format off
  opts.add()
      ("n", cli::int_value(default_n)->notifier(cli::positive<int64_t>("n")), "training examples (/train)")
      ("valid-n", cli::int_value(default_eval_n)->notifier(cli::positive<int64_t>("valid-n")),
       "validation examples (/valid)")
      ("test-n", cli::int_value(default_eval_n)->notifier(cli::positive<int64_t>("test-n")),
       "test examples (/test)");
  // clang-format on
}

datasets::SplitSizes split_sizes(const cli::Options& opts) {
  return {opts.get<int64_t>("n"), opts.get<int64_t>("valid-n"), opts.get<int64_t>("test-n")};
}

uint64_t seed(const cli::Options& opts) { return static_cast<uint64_t>(opts.get<int64_t>("seed")); }

void print_written(const cli::Options& opts, const datasets::SplitSizes& sizes) {
  const std::string out = opts.get<std::string>("out");
  cli::print_summary(opts, opts.tool() + " " + opts.verb() + ": wrote " + (out == "-" ? "standard output" : out) +
                               " (train " + std::to_string(sizes.train) + ", valid " +
                               std::to_string(sizes.valid) + ", test " + std::to_string(sizes.test) +
                               " examples)");
}

}  // namespace attn::data_tool

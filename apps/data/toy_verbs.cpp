// attn-data reverse | sort: toy translation over random tokens (datasets/toy_translation.hpp;
// layout in datasets/README.md).
#include "attn/datasets/toy_translation.hpp"
#include "verbs.hpp"

namespace attn::data_tool {
namespace {

using cli::int_value;

int run_toy(datasets::ToyTask task, const char* about, int argc, char** argv) {
  cli::Options opts(kTool, "--out FILE [options]", about);
  add_generator_options(opts, 10000, 1000);
  // clang-format off
  opts.add()
      ("vocab", int_value(14)->notifier(cli::at_least<int64_t>("vocab", 5)),
       "vocabulary size, the reserved ids 0-3 (<pad> <s> </s> <unk>) included")
      ("min-len", int_value(3)->notifier(cli::positive<int64_t>("min-len")), "shortest source, in tokens")
      ("max-len", int_value(10)->notifier(cli::positive<int64_t>("max-len")), "longest source, in tokens");
  // clang-format on
  if (!opts.parse(argc, argv)) return 0;
  cli::require_at_least(opts, "max-len", "min-len");

  datasets::ToyConfig cfg;
  cfg.task = task;
  cfg.vocab = opts.get<int64_t>("vocab");
  cfg.min_len = opts.get<int64_t>("min-len");
  cfg.max_len = opts.get<int64_t>("max-len");
  const datasets::SplitSizes sizes = split_sizes(opts);
  const auto splits = datasets::make_toy_translation(cfg, sizes, seed(opts));
  const std::vector<std::string> vocab = datasets::toy_vocabulary(cfg.vocab);
  cli::write_output(opts, kDatasetFormat, datasets::toy_task_name(task), [&](io::File& file) {
    datasets::write_splits(file, splits);
    datasets::write_vocabularies(file, vocab, vocab);
  });
  print_written(opts, sizes);
  return 0;
}

}  // namespace

int cmd_reverse(int argc, char** argv) {
  return run_toy(datasets::ToyTask::reverse,
                 "Toy translation: random token sequences; the target is the source reversed, then\n"
                 "</s>. Ids 0-3 are <pad> <s> </s> <unk>. Layout: datasets/README.md.",
                 argc, argv);
}

int cmd_sort(int argc, char** argv) {
  return run_toy(datasets::ToyTask::sort,
                 "Toy translation: random token sequences; the target is the source sorted by id, then\n"
                 "</s>. Ids 0-3 are <pad> <s> </s> <unk>. Layout: datasets/README.md.",
                 argc, argv);
}

}  // namespace attn::data_tool

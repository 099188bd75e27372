// attn-data copy | repeat-copy | assoc-recall | priority-sort: the NTM tasks of Graves et al.
// 2014, section 4 (datasets/ntm_tasks.hpp; layouts in datasets/README.md).
#include "attn/datasets/ntm_tasks.hpp"
#include "verbs.hpp"

namespace attn::data_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;
using cli::positive;

constexpr const char* kSynopsis = "--out FILE [options]";

// Adds --width W and the --min-len/--max-len pair.
void add_width_and_lengths(cli::Options& opts, int64_t width, int64_t min_len, int64_t max_len) {
  // clang-format off
  opts.add()
      ("width", int_value(width)->notifier(positive<int64_t>("width")), "bits per vector")
      ("min-len", int_value(min_len)->notifier(positive<int64_t>("min-len")), "shortest sequence, in vectors")
      ("max-len", int_value(max_len)->notifier(positive<int64_t>("max-len")), "longest sequence, in vectors");
  // clang-format on
}

void write_tasks(const cli::Options& opts, const std::string& kind,
                 const datasets::Splits<datasets::SequenceSplit>& splits) {
  cli::write_output(opts, kDatasetFormat, kind, [&](io::File& file) { datasets::write_splits(file, splits); });
  print_written(opts, split_sizes(opts));
}

}  // namespace

int cmd_copy(int argc, char** argv) {
  cli::Options opts(kTool, kSynopsis,
                    "The copy task (Graves et al. 2014, section 4.1): a sequence of random bit vectors,\n"
                    "then a delimiter; the target is the sequence. Layout: datasets/README.md.");
  add_generator_options(opts, 10000, 1000);
  add_width_and_lengths(opts, 8, 1, 20);
  if (!opts.parse(argc, argv)) return 0;
  cli::require_at_least(opts, "max-len", "min-len");

  datasets::CopyConfig cfg;
  cfg.width = opts.get<int64_t>("width");
  cfg.min_len = opts.get<int64_t>("min-len");
  cfg.max_len = opts.get<int64_t>("max-len");
  write_tasks(opts, "copy", datasets::make_copy(cfg, split_sizes(opts), seed(opts)));
  return 0;
}

int cmd_repeat_copy(int argc, char** argv) {
  cli::Options opts(kTool, kSynopsis,
                    "The repeat copy task (Graves et al. 2014, section 4.2): a sequence of random bit\n"
                    "vectors, then a row with a delimiter and the normalised repeat count; the target is\n"
                    "the sequence repeated that many times, then an end marker. Layout: datasets/README.md.");
  add_generator_options(opts, 10000, 1000);
  add_width_and_lengths(opts, 8, 1, 10);
  // clang-format off
  opts.add()
      ("min-repeat", int_value(1)->notifier(positive<int64_t>("min-repeat")), "fewest repeats")
      ("max-repeat", int_value(10)->notifier(positive<int64_t>("max-repeat")), "most repeats")
      ("norm-repeat", int_value(10)->notifier(cli::at_least<int64_t>("norm-repeat", 2)),
       "the count channel holds (c - mean) / std of the uniform distribution on 1..norm-repeat; "
       "keep it when --max-repeat grows for a generalisation test");
  // clang-format on
  if (!opts.parse(argc, argv)) return 0;
  cli::require_at_least(opts, "max-len", "min-len");
  cli::require_at_least(opts, "max-repeat", "min-repeat");

  datasets::RepeatCopyConfig cfg;
  cfg.width = opts.get<int64_t>("width");
  cfg.min_len = opts.get<int64_t>("min-len");
  cfg.max_len = opts.get<int64_t>("max-len");
  cfg.min_repeat = opts.get<int64_t>("min-repeat");
  cfg.max_repeat = opts.get<int64_t>("max-repeat");
  cfg.norm_repeat = opts.get<int64_t>("norm-repeat");
  write_tasks(opts, "repeat-copy", datasets::make_repeat_copy(cfg, split_sizes(opts), seed(opts)));
  return 0;
}

int cmd_assoc_recall(int argc, char** argv) {
  cli::Options opts(kTool, kSynopsis,
                    "The associative recall task (Graves et al. 2014, section 4.3): distinct items of\n"
                    "--item-len bit vectors, each after an item delimiter, then a query item between two\n"
                    "query delimiters; the target is the item that followed the query. Layout:\n"
                    "datasets/README.md.");
  add_generator_options(opts, 10000, 1000);
  // clang-format off
  opts.add()
      ("width", int_value(6)->notifier(positive<int64_t>("width")), "bits per vector")
      ("item-len", int_value(3)->notifier(positive<int64_t>("item-len")), "vectors per item")
      ("min-items", int_value(2)->notifier(cli::at_least<int64_t>("min-items", 2)), "fewest items")
      ("max-items", int_value(6)->notifier(cli::at_least<int64_t>("max-items", 2)), "most items");
  // clang-format on
  if (!opts.parse(argc, argv)) return 0;
  cli::require_at_least(opts, "max-items", "min-items");

  datasets::AssocRecallConfig cfg;
  cfg.width = opts.get<int64_t>("width");
  cfg.item_len = opts.get<int64_t>("item-len");
  cfg.min_items = opts.get<int64_t>("min-items");
  cfg.max_items = opts.get<int64_t>("max-items");
  write_tasks(opts, "assoc-recall", datasets::make_assoc_recall(cfg, split_sizes(opts), seed(opts)));
  return 0;
}

int cmd_priority_sort(int argc, char** argv) {
  cli::Options opts(kTool, kSynopsis,
                    "The priority sort task (Graves et al. 2014, section 4.5): random bit vectors, each\n"
                    "with a priority drawn from [-1, 1), then a delimiter; the target is the --out-n\n"
                    "vectors of highest priority, highest first. Layout: datasets/README.md.");
  add_generator_options(opts, 10000, 1000);
  // clang-format off
  opts.add()
      ("width", int_value(8)->notifier(positive<int64_t>("width")), "bits per vector")
      ("in-n", int_value(20)->notifier(positive<int64_t>("in-n")), "input vectors per example")
      ("out-n", int_value(16)->notifier(positive<int64_t>("out-n")), "target vectors: the highest priorities");
  // clang-format on
  if (!opts.parse(argc, argv)) return 0;
  if (opts.get<int64_t>("out-n") > opts.get<int64_t>("in-n"))
    throw ConfigError("--out-n must be <= --in-n (" + std::to_string(opts.get<int64_t>("in-n")) + "), got " +
                      std::to_string(opts.get<int64_t>("out-n")));

  datasets::PrioritySortConfig cfg;
  cfg.width = opts.get<int64_t>("width");
  cfg.in_n = opts.get<int64_t>("in-n");
  cfg.out_n = opts.get<int64_t>("out-n");
  write_tasks(opts, "priority-sort", datasets::make_priority_sort(cfg, split_sizes(opts), seed(opts)));
  return 0;
}

}  // namespace attn::data_tool

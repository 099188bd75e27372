// attn-data babi: the bAbI question-answering tasks imported into the question-answering
// layout (datasets/babi.hpp; layout, words and splits in datasets/README.md).
#include <algorithm>
#include <charconv>

#include "attn/datasets/babi.hpp"
#include "attn/io/hdf5_file.hpp"
#include "verbs.hpp"

namespace attn::data_tool {
namespace {

namespace po = boost::program_options;

// --task: "all" -> 0, "1".."20" -> the number; anything else is a usage error.
int task_number(const std::string& text) {
  if (text == "all") return 0;
  int task = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), task);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || task < 1 || task > datasets::kBabiTasks)
    throw ConfigError("--task must be a task number 1-20 or 'all', got '" + text + "'");
  return task;
}

void check_fraction(const double& f) {
  if (!(f >= 0.0 && f < 1.0))
    throw ConfigError("--valid-fraction must be in [0, 1), got " + cli::format_number(f));
}

}  // namespace

int cmd_babi(int argc, char** argv) {
  cli::Options opts(kTool, "--task N|all --data-dir DIR --out FILE [options]",
                    "The bAbI question-answering tasks v1.2 (Weston et al. 2015) as the end-to-end memory\n"
                    "network reads them (Sukhbaatar et al. 2015): each question with the last --memory-size\n"
                    "statements of its story, lower-cased words, one vocabulary. DIR/<set>/ holds the\n"
                    "qa<N>_<name>_{train,test}.txt files; /valid is held out of the training file, /test is\n"
                    "the test file. Layout: datasets/README.md.");
  opts.out("output HDF5 file").seed();
  // clang-format off
  opts.add()
      ("task", po::value<std::string>()->value_name("N|all")->required()->notifier([](const std::string& t) {
         task_number(t);
       }),
       "the task 1-20, or all: every task of the set in one file (joint training), told apart by "
       "/<split>/task")
      ("set", cli::choice("set", "en", {"en", "en-10k"}),
       "en: 1,000 training questions per task; en-10k: 10,000 (it has no task 3 training file here)")
      ("data-dir", po::value<std::string>()->required()->value_name("DIR"),
       "folder of the sets en/ and en-10k/ (e.g. ../shared/data/babi)")
      ("memory-size", cli::int_value(50)->notifier(cli::positive<int64_t>("memory-size")),
       "a question's memory: at most this many of its story's latest statements")
      ("valid-fraction", po::value<double>()->value_name("X")->default_value(0.1, "0.1")->notifier(check_fraction),
       "of each task's training questions, held out as /valid (chosen by --seed)");
  // clang-format on
  if (!opts.parse(argc, argv)) return 0;

  const std::string set = opts.get<std::string>("set");
  const std::string dir = opts.get<std::string>("data-dir") + "/" + set;
  datasets::BabiTasks read =
      datasets::read_babi_tasks(dir, task_number(opts.get<std::string>("task")), opts.get<int64_t>("memory-size"));
  datasets::BabiConfig cfg;
  cfg.valid_fraction = opts.get<double>("valid-fraction");
  cfg.seed = seed(opts);
  datasets::BabiData data = datasets::build_babi(read.tasks, cfg);
  data.left_out = read.left_out;
  cli::write_output(opts, kDatasetFormat, "babi", [&](io::File& file) { datasets::write_babi(file, data); });

  const std::string out = opts.get<std::string>("out");
  std::string line = opts.tool() + " babi: wrote " + (out == "-" ? "standard output" : out) + " (" + set +
                     (data.tasks.size() == 1 ? " task " : " tasks ") + datasets::task_ranges(data.tasks);
  if (!data.left_out.empty())
    line += ", left out " + datasets::task_ranges(data.left_out) + " (no training file)";
  int64_t ms = 0, ws = 0, wq = 0;
  for (int k = 0; k < 3; ++k) {
    const memnet::QaSplit& s = data.splits[k];
    line += std::string(k ? ", " : ": ") + datasets::kSplitNames[k] + " " + std::to_string(s.size());
    ms = std::max(ms, s.memory_size());
    ws = std::max(ws, s.sentence_width());
    wq = std::max(wq, s.question_width());
  }
  line += " questions; vocabulary " + std::to_string(data.vocab.size()) + ", memory " + std::to_string(ms) +
          " of at most " + std::to_string(opts.get<int64_t>("memory-size")) + " sentences, longest sentence " +
          std::to_string(ws) + " and question " + std::to_string(wq) + " words, " +
          std::to_string(data.unknown_test_words) + " unknown test words";
  if (!data.test_only_answers.empty()) {
    const size_t n = data.test_only_answers.size();
    line += ", " + std::to_string(n) + (n == 1 ? " test answer" : " test answers") + " in no training question:";
    for (const std::string& a : data.test_only_answers) line += " " + a;
  }
  cli::print_summary(opts, line + ")");
  return 0;
}

}  // namespace attn::data_tool

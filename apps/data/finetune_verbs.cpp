// attn-data babi-cls | text | pairs: the data of pre-training and fine-tuning (datasets/babi_cls.hpp,
// datasets/parallel_text.hpp, datasets/sentence_pairs.hpp; layouts in datasets/README.md): bAbI
// questions as labelled sequences, any plain text as a language-modelling set for
// attn-transformer train --arch lm or mlm, and sentence pairs of a parallel corpus.
#include <algorithm>
#include <charconv>
#include <optional>

#include "attn/datasets/babi_cls.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "attn/datasets/sentence_pairs.hpp"
#include "attn/io/hdf5_file.hpp"
#include "verbs.hpp"

namespace attn::data_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;

// --vocab-from FILE: the vocabulary of another data set, /vocab/src or else /vocab/tgt (a model
// pre-trained on it reads ids of this one).
std::optional<data::Vocab> vocab_from(const cli::Options& opts) {
  if (!opts.has("vocab-from")) return std::nullopt;
  for (const char* option : {"min-freq", "max-vocab"})
    opts.refuse_together("vocab-from", option, "the vocabulary is the other data set's, as it is");
  const io::File f = io::open_dataset(opts.get<std::string>("vocab-from"));
  return data::read_vocab(f, f.exists("/vocab/src") ? "/vocab/src" : "/vocab/tgt");
}

void add_vocab_from(cli::Options& opts) {
  opts.add()("vocab-from", po::value<std::string>()->value_name("FILE"),
             "encode the words with the vocabulary of this data set (/vocab/src, else /vocab/tgt), unknown "
             "ones as <unk>: the pre-training set of the model to fine-tune");
}

int babi_task(const std::string& text) {
  if (text == "all") return 0;
  int task = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), task);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || task < 1 || task > datasets::kBabiTasks)
    throw ConfigError("--task must be a task number 1-20 or 'all', got '" + text + "'");
  if (datasets::is_babi_list_task(task))
    throw ConfigError("--task " + text + " answers with lists of words, not one class; babi-cls leaves out tasks 8 and 19");
  return task;
}

// The last `n` lines of `lines` (one side), removed from it.
std::vector<std::string> take_tail(std::vector<std::string>& lines, int64_t n, const std::string& flag) {
  if (n > static_cast<int64_t>(lines.size()))
    throw ConfigError("--" + flag + " is " + std::to_string(n) + " but only " + std::to_string(lines.size()) +
                      " lines are left to hold out");
  std::vector<std::string> tail(lines.end() - n, lines.end());
  lines.resize(lines.size() - static_cast<size_t>(n));
  return tail;
}

// Tokenisation and vocabulary options of text and pairs (min-freq default differs).
void add_tokens_options(cli::Options& opts, int64_t min_freq) {
  // clang-format off
  opts.add()
      ("min-freq", int_value(min_freq)->notifier(cli::positive<int64_t>("min-freq")),
       "keep tokens seen at least this often in the training lines")
      ("max-vocab", int_value(0)->notifier(cli::at_least<int64_t>("max-vocab", 0)),
       "at most this many ids, the 4 reserved included; 0: no limit")
      ("max-len", int_value(0)->notifier(cli::at_least<int64_t>("max-len", 0)),
       "drop training lines (pairs: with a side) longer than this many tokens; 0: keep all")
      ("lowercase", po::bool_switch(), "lower-case the text before tokenising");
  // clang-format on
  add_vocab_from(opts);
}

datasets::ParallelConfig tokens_config(const cli::Options& opts) {
  datasets::ParallelConfig cfg;
  cfg.tokenize.lowercase = opts.get<bool>("lowercase");
  cfg.src_vocab = {.min_freq = opts.get<int64_t>("min-freq"), .max_size = opts.get<int64_t>("max-vocab")};
  if (cfg.src_vocab.max_size != 0 && cfg.src_vocab.max_size <= data::kNumReserved)
    throw ConfigError("--max-vocab must be 0 (no limit) or > 4 (the reserved ids), got " +
                      std::to_string(cfg.src_vocab.max_size));
  cfg.tgt_vocab = cfg.src_vocab;
  cfg.max_len = opts.get<int64_t>("max-len");
  cfg.vocab = vocab_from(opts);
  return cfg;
}

}  // namespace

int cmd_babi_cls(int argc, char** argv) {
  cli::Options opts(kTool, "--task N|all --data-dir DIR --out FILE [options]",
                    "bAbI v1.2 (Weston et al. 2015) as sequence classification for a fine-tuned Transformer: each\n"
                    "question's memory (the last --memory-size statements of its story) as segment 0, the question\n"
                    "as segment 1, the one-word answer as the class. The same questions and splits as attn-data\n"
                    "babi with the same options; tasks 8 and 19 (answers of several words) are left out.\n"
                    "Layout: datasets/README.md.");
  opts.out("output HDF5 file").seed();
  // clang-format off
  opts.add()
      ("task", po::value<std::string>()->value_name("N|all")->required()->notifier([](const std::string& t) {
         babi_task(t);
       }),
       "the task (1-20 but 8 and 19), or all: every single-word-answer task in one file")
      ("set", cli::choice("set", "en", {"en", "en-10k"}), "en: 1,000 training questions per task; en-10k: 10,000")
      ("data-dir", po::value<std::string>()->required()->value_name("DIR"),
       "folder of the sets en/ and en-10k/ (e.g. ../shared/data/babi)")
      ("memory-size", int_value(50)->notifier(cli::positive<int64_t>("memory-size")),
       "a question's memory: at most this many of its story's latest statements")
      ("valid-fraction", po::value<double>()->value_name("X")->default_value(0.1, "0.1")->notifier([](const double& f) {
         if (!(f >= 0.0 && f < 1.0))
           throw ConfigError("--valid-fraction must be in [0, 1), got " + cli::format_number(f));
       }),
       "of each task's training questions, held out as /valid (chosen by --seed)");
  // clang-format on
  add_vocab_from(opts);
  if (!opts.parse(argc, argv)) return 0;

  const std::string set = opts.get<std::string>("set");
  datasets::BabiTasks read = datasets::read_babi_tasks(opts.get<std::string>("data-dir") + "/" + set,
                                                       babi_task(opts.get<std::string>("task")),
                                                       opts.get<int64_t>("memory-size"));
  datasets::BabiConfig cfg;
  cfg.valid_fraction = opts.get<double>("valid-fraction");
  cfg.seed = seed(opts);
  datasets::BabiData qa = datasets::build_babi(read.tasks, cfg);
  qa.left_out = read.left_out;
  const std::optional<data::Vocab> vocab = vocab_from(opts);
  const datasets::BabiClsData data = datasets::babi_classification(qa, vocab ? &*vocab : nullptr);
  cli::write_output(opts, kDatasetFormat, "babi-cls",
                    [&](io::File& file) { datasets::write_babi_classification(file, data); });

  std::string line = opts.tool() + " babi-cls: wrote " + opts.get<std::string>("out") + " (" + set + " tasks " +
                     datasets::task_ranges(data.tasks);
  if (!data.left_out.empty()) line += ", left out " + datasets::task_ranges(data.left_out);
  for (int k = 0; k < 3; ++k)
    line += std::string(k ? ", " : ": ") + datasets::kSplitNames[k] + " " + std::to_string(data.splits[k].size());
  line += " examples; " + std::to_string(data.labels.size()) + " classes, vocabulary " +
          std::to_string(data.vocab.size()) + ", longest example " + std::to_string(data.longest) + " words";
  if (vocab) line += ", " + std::to_string(data.unknown_words) + " words not in --vocab-from";
  cli::print_summary(opts, line + ")");
  return 0;
}

int cmd_text(int argc, char** argv) {
  cli::Options opts(kTool, "--in FILE --out FILE [options]",
                    "Any plain-text or gzip file as a language-modelling set, one sequence a line (pre-training for\n"
                    "attn-transformer train --arch lm, which reads /tgt, or --arch mlm, which reads /src): Moses-style\n"
                    "tokens, one vocabulary from the training lines; the last --valid-n / --test-n lines are held out.\n"
                    "Layout: datasets/README.md.");
  opts.out("output HDF5 file");
  // clang-format off
  opts.add()
      ("in", po::value<std::string>()->required()->value_name("FILE"), "the text, one sentence (or story) a line")
      ("valid-n", int_value(0)->notifier(cli::at_least<int64_t>("valid-n", 0)), "hold out this many lines as /valid")
      ("test-n", int_value(0)->notifier(cli::at_least<int64_t>("test-n", 0)), "hold out this many lines as /test");
  // clang-format on
  add_tokens_options(opts, 1);
  if (!opts.parse(argc, argv)) return 0;

  // One text as both sides of a parallel corpus: /src the tokens, /tgt the tokens then EOS.
  std::vector<std::string> lines = datasets::read_text_lines(opts.get<std::string>("in"));
  datasets::Splits<datasets::TextPairs> text;
  for (const std::string split : {"test", "valid"}) {   // test first: the very end of the file
    std::vector<std::string> tail = take_tail(lines, opts.get<int64_t>(split + "-n"), split + "-n");
    (split == "test" ? text.test : text.valid) = {tail, tail};
  }
  text.train = {lines, lines};
  datasets::ParallelConfig cfg = tokens_config(opts);
  cfg.one_text = true;
  const datasets::ParallelData data = datasets::build_parallel(text, cfg);
  cli::write_output(opts, kDatasetFormat, "text", [&](io::File& file) { datasets::write_parallel(file, data); });
  std::string line = opts.tool() + " text: wrote " + opts.get<std::string>("out") + " (";
  for (int k = 0; k < 3; ++k) {
    const datasets::ParallelSplit& s = data.splits[k];
    line += std::string(k ? ", " : "") + datasets::kSplitNames[k] + " " + std::to_string(s.tokens.src.dim(0));
    if (s.dropped) line += " of " + std::to_string(s.lines);
  }
  cli::print_summary(opts, line + " lines; vocabulary " + std::to_string(data.src_vocab.size()) + ")");
  return 0;
}

int cmd_pairs(int argc, char** argv) {
  cli::Options opts(kTool, "(--src-file A --tgt-file B | --multi30k DIR) --out FILE [options]",
                    "Sentence-pair classification from a parallel corpus, BERT's sentence-pair task on real text:\n"
                    "is B the translation of A? Every line pair gives A | B (class translation) and A | B' (class\n"
                    "other), B' the target of another line of the same split drawn by --seed. One vocabulary for\n"
                    "both sides. Valid and test: Multi30k's own files, or the last --valid-n / --test-n lines.\n"
                    "Layout: datasets/README.md.");
  opts.out("output HDF5 file").seed();
  const auto file = [] { return po::value<std::string>()->value_name("FILE"); };
  // clang-format off
  opts.add()
      ("src-file", file(), "sentences A, one a line (plain or gzip)")
      ("tgt-file", file(), "their translations B, aligned with --src-file")
      ("multi30k", po::value<std::string>()->value_name("DIR"), "Multi30k's folder instead (train, val, test_2016_flickr)")
      ("src", cli::choice("src", "de", {"de", "en", "fr", "cs"}), "with --multi30k: the language of A")
      ("tgt", cli::choice("tgt", "en", {"de", "en", "fr", "cs"}), "with --multi30k: the language of B")
      ("valid-n", int_value(0)->notifier(cli::at_least<int64_t>("valid-n", 0)), "with --src-file: lines held out as /valid")
      ("test-n", int_value(0)->notifier(cli::at_least<int64_t>("test-n", 0)), "with --src-file: lines held out as /test");
  // clang-format on
  add_tokens_options(opts, 2);
  if (!opts.parse(argc, argv)) return 0;

  datasets::Splits<datasets::TextPairs> text;
  if (opts.has("multi30k") == (opts.has("src-file") || opts.has("tgt-file")))
    throw ConfigError("give --src-file and --tgt-file, or --multi30k DIR");
  if (opts.has("multi30k")) {
    if (opts.get<int64_t>("valid-n") != 0 || opts.get<int64_t>("test-n") != 0)
      throw ConfigError("--valid-n and --test-n hold out lines of --src-file; Multi30k has its own valid and test files");
    text = datasets::read_multi30k(opts.get<std::string>("multi30k"), opts.get<std::string>("src"),
                                   opts.get<std::string>("tgt"));
  } else {
    if (!opts.has("src-file") || !opts.has("tgt-file")) throw ConfigError("give both --src-file and --tgt-file");
    text.train = datasets::read_text_pairs(opts.get<std::string>("src-file"), opts.get<std::string>("tgt-file"));
    for (const std::string split : {"test", "valid"}) {
      const int64_t n = opts.get<int64_t>(split + "-n");
      datasets::TextPairs& dest = split == "test" ? text.test : text.valid;
      dest.src = take_tail(text.train.src, n, split + "-n");
      dest.tgt = take_tail(text.train.tgt, n, split + "-n");
    }
  }
  datasets::ParallelConfig cfg = tokens_config(opts);
  if (!cfg.vocab) cfg.vocab = datasets::joint_vocab(text, cfg.tokenize, cfg.src_vocab);
  const datasets::PairsData data = datasets::sentence_pairs(datasets::build_parallel(text, cfg), seed(opts));
  cli::write_output(opts, kDatasetFormat, "pairs", [&](io::File& f) { datasets::write_sentence_pairs(f, data); });
  std::string line = opts.tool() + " pairs: wrote " + opts.get<std::string>("out") + " (";
  for (int k = 0; k < 3; ++k)
    line += std::string(k ? ", " : "") + datasets::kSplitNames[k] + " " + std::to_string(data.splits[k].size());
  cli::print_summary(opts, line + " examples, half of them translations; vocabulary " +
                               std::to_string(data.vocab.size()) + ")");
  return 0;
}

}  // namespace attn::data_tool

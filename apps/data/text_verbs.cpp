// attn-data multi30k | parallel: parallel text imported into the translation layout
// (datasets/parallel_text.hpp; layout and tokenisation in datasets/README.md).
#include <memory>

#include "attn/data/subword.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "attn/io/hdf5_file.hpp"
#include "verbs.hpp"

namespace attn::data_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;

// The options both verbs share: tokenisation and vocabulary.
void add_text_options(cli::Options& opts) {
  // clang-format off
  opts.add()
      ("min-freq", int_value(2)->notifier(cli::positive<int64_t>("min-freq")),
       "keep tokens seen at least this often in the training split (both vocabularies)")
      ("max-vocab", int_value(0)->notifier(cli::at_least<int64_t>("max-vocab", 0)),
       "at most this many ids per vocabulary, the 4 reserved included; 0: no limit")
      ("max-len", int_value(0)->notifier(cli::at_least<int64_t>("max-len", 0)),
       "drop training pairs with a side longer than this many tokens; 0: keep all")
      ("lowercase", po::bool_switch(), "lower-case the text before tokenising")
      ("subword-model", po::value<std::string>()->value_name("MODEL"),
       "split both sides into this SentencePiece model's pieces (attn-data subword; a joint model) "
       "instead of words: the vocabularies are its pieces, --min-freq and --max-vocab do not apply")
      ("src-subword-model", po::value<std::string>()->value_name("MODEL"),
       "the source side's own SentencePiece model (with --tgt-subword-model)")
      ("tgt-subword-model", po::value<std::string>()->value_name("MODEL"),
       "the target side's own SentencePiece model (with --src-subword-model)");
  // clang-format on
}

// The subword models of --subword-model or --src/--tgt-subword-model (none: words).
void subword_models(const cli::Options& opts, datasets::ParallelConfig& cfg) {
  const auto load = [&](const std::string& option) {
    const std::string path = opts.get<std::string>(option);
    opts.check_input("the --" + option + " file " + path, path);
    return std::make_shared<const data::SubwordModel>(data::SubwordModel::load(path));
  };
  for (const char* option : {"src-subword-model", "tgt-subword-model"})
    opts.refuse_together("subword-model", option, "--subword-model is one model for both sides");
  for (const char* option : {"min-freq", "max-vocab"})
    if (opts.given(option) && (opts.has("subword-model") || opts.has("src-subword-model")))
      throw ConfigError("--" + std::string(option) +
                        " builds a word vocabulary; a subword model's vocabulary is its "
                        "pieces (leave --" +
                        option + " out)");
  if (opts.has("subword-model")) {
    cfg.src_subword = cfg.tgt_subword = load("subword-model");
  } else if (opts.has("src-subword-model") || opts.has("tgt-subword-model")) {
    if (!opts.has("src-subword-model") || !opts.has("tgt-subword-model"))
      throw ConfigError("give both --src-subword-model and --tgt-subword-model, or --subword-model for both sides");
    cfg.src_subword = load("src-subword-model");
    cfg.tgt_subword = load("tgt-subword-model");
  }
}

datasets::ParallelConfig text_config(const cli::Options& opts) {
  datasets::ParallelConfig cfg;
  cfg.tokenize.lowercase = opts.get<bool>("lowercase");
  cfg.src_vocab = {.min_freq = opts.get<int64_t>("min-freq"), .max_size = opts.get<int64_t>("max-vocab")};
  if (cfg.src_vocab.max_size != 0 && cfg.src_vocab.max_size <= data::kNumReserved)
    throw ConfigError("--max-vocab must be 0 (no limit) or > 4 (the reserved ids), got " +
                      std::to_string(cfg.src_vocab.max_size));
  cfg.tgt_vocab = cfg.src_vocab;
  cfg.max_len = opts.get<int64_t>("max-len");
  subword_models(opts, cfg);
  return cfg;
}

void write_and_report(const cli::Options& opts, const char* kind,
                      const datasets::Splits<datasets::TextPairs>& text) {
  const datasets::ParallelData data = datasets::build_parallel(text, text_config(opts));
  cli::write_output(opts, kDatasetFormat, kind, [&](io::File& file) { datasets::write_parallel(file, data); });
  std::string line = std::string(kTool) + " " + kind + ": wrote " + opts.get<std::string>("out") + " (";
  for (int k = 0; k < 3; ++k) {
    const datasets::ParallelSplit& s = data.splits[k];
    line += std::string(k ? ", " : "") + datasets::kSplitNames[k] + " " + std::to_string(s.tokens.src.dim(0));
    if (s.dropped) line += " of " + std::to_string(s.lines);
  }
  line += " pairs; vocabularies " + std::to_string(data.src_vocab.size()) + " / " +
          std::to_string(data.tgt_vocab.size()) + ")";
  cli::print_summary(opts, line);
}

// The last `n` pairs of `from`, removed from it.
datasets::TextPairs take_tail(datasets::TextPairs& from, int64_t n, const std::string& split) {
  if (n > static_cast<int64_t>(from.src.size()))
    throw ConfigError("--" + split + "-n is " + std::to_string(n) + " but only " +
                      std::to_string(from.src.size()) + " training lines are left to hold out");
  const auto cut = static_cast<std::ptrdiff_t>(from.src.size()) - n;
  datasets::TextPairs out{{from.src.begin() + cut, from.src.end()}, {from.tgt.begin() + cut, from.tgt.end()}};
  from.src.resize(static_cast<size_t>(cut));
  from.tgt.resize(static_cast<size_t>(cut));
  return out;
}

}  // namespace

int cmd_multi30k(int argc, char** argv) {
  cli::Options opts(kTool, "--data-dir DIR --out FILE [options]",
                    "Multi30k task 1 (Elliott et al. 2016): DIR/{train,val,test_2016_flickr}.<lang>.gz\n"
                    "become the splits train, valid and test; Moses-style tokens, vocabularies from\n"
                    "train. Layout: datasets/README.md.");
  opts.out("output HDF5 file");
  // clang-format off
  opts.add()
      ("src", cli::choice("src", "de", {"de", "en", "fr", "cs"}), "source language")
      ("tgt", cli::choice("tgt", "en", {"de", "en", "fr", "cs"}), "target language")
      ("data-dir", po::value<std::string>()->required()->value_name("DIR"),
       "folder of the Multi30k .gz files (e.g. ../shared/data/multi30k)");
  // clang-format on
  add_text_options(opts);
  if (!opts.parse(argc, argv)) return 0;
  const auto text = datasets::read_multi30k(opts.get<std::string>("data-dir"), opts.get<std::string>("src"),
                                            opts.get<std::string>("tgt"));
  write_and_report(opts, "multi30k", text);
  return 0;
}

int cmd_parallel(int argc, char** argv) {
  cli::Options opts(kTool, "--src-file A --tgt-file B --out FILE [options]",
                    "Any line-aligned parallel text (plain or gzip): line i of --src-file translates\n"
                    "line i of --tgt-file. Valid and test come from their own files, or are the last\n"
                    "--valid-n / --test-n training lines (test last). Layout: datasets/README.md.");
  opts.out("output HDF5 file");
  const auto file = [] { return po::value<std::string>()->value_name("FILE"); };
  // clang-format off
  opts.add()
      ("src-file", file()->required(), "training source text, one sentence a line")
      ("tgt-file", file()->required(), "training target text, aligned with --src-file")
      ("valid-src-file", file(), "validation source text")
      ("valid-tgt-file", file(), "validation target text")
      ("test-src-file", file(), "test source text")
      ("test-tgt-file", file(), "test target text")
      ("valid-n", int_value(0)->notifier(cli::at_least<int64_t>("valid-n", 0)),
       "without validation files: hold out this many training lines")
      ("test-n", int_value(0)->notifier(cli::at_least<int64_t>("test-n", 0)),
       "without test files: hold out this many training lines");
  // clang-format on
  add_text_options(opts);
  if (!opts.parse(argc, argv)) return 0;

  datasets::Splits<datasets::TextPairs> text;
  text.train = datasets::read_text_pairs(opts.get<std::string>("src-file"), opts.get<std::string>("tgt-file"));
  for (const std::string split : {"test", "valid"}) {   // test first: it is the very end of the file
    const std::string src = split + "-src-file", tgt = split + "-tgt-file", n = split + "-n";
    if (opts.has(src) != opts.has(tgt)) throw ConfigError("give both --" + src + " and --" + tgt + ", or neither");
    datasets::TextPairs& dest = split == "test" ? text.test : text.valid;
    if (opts.has(src)) {
      if (opts.get<int64_t>(n) != 0) throw ConfigError("give --" + src + " or --" + n + ", not both");
      dest = datasets::read_text_pairs(opts.get<std::string>(src), opts.get<std::string>(tgt));
    } else {
      dest = take_tail(text.train, opts.get<int64_t>(n), split);
    }
  }
  write_and_report(opts, "parallel", text);
  return 0;
}

}  // namespace attn::data_tool

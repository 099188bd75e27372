// attn-data subword: trains a SentencePiece model (BPE or unigram) on raw training text and writes
// it as a .model file of its own (data/subword.hpp), the subword vocabulary that the text verbs
// build data sets with.
#include <numeric>

#include "attn/data/subword.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "attn/io/output_file.hpp"
#include "verbs.hpp"

namespace attn::data_tool {

namespace po = boost::program_options;

int cmd_subword(int argc, char** argv) {
  cli::Options opts(kTool, "--text FILE [FILE ...] --out MODEL [options]",
                    "Trains a SentencePiece subword model (Kudo & Richardson 2018) on the lines of the --text\n"
                    "files (plain or gzip, UTF-8): give the training split's raw text only, never valid or\n"
                    "test. One model for both sides of a translation set: give both sides' files; one per\n"
                    "side: run it once per side. Writes SentencePiece's .model file (spm_encode reads it\n"
                    "too), whose ids 0-3 are attnlab's <pad> <s> </s> <unk>.");
  // clang-format off
  opts.add()
      ("text", po::value<std::vector<std::string>>()->required()->multitoken()->value_name("FILE"),
       "training text, one sentence per line (several files: their lines together)")
      ("type", cli::choice("type", "bpe", {"bpe", "unigram"}),
       "bpe (Sennrich et al. 2016) or unigram (Kudo 2018)")
      ("vocab-size", cli::int_value(8000)->notifier(cli::in_range<int64_t>("vocab-size", 5, int64_t{1} << 24)),
       "pieces in the vocabulary, the 4 reserved included")
      ("character-coverage", po::value<double>()->value_name("C")->default_value(1.0, "1.0")
                                 ->notifier(cli::in_range<double>("character-coverage", 1e-6, 1.0)),
       "share of the text's characters the pieces must cover (1.0 for alphabets; SentencePiece "
       "suggests 0.9995 for Chinese or Japanese)")
      ("normalization", cli::choice("normalization", "nmt_nfkc", {"nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity"}),
       "SentencePiece's normalisation before splitting: nmt_nfkc (Unicode NFKC, spaces folded; its "
       "default), nfkc, the _cf variants (also case-folded), identity (the text as it is)");
  // clang-format on
  opts.threads();
  opts.out("the SentencePiece model (a .model file)");
  if (!opts.parse(argc, argv)) return 0;
  const std::vector<std::string> files = opts.get<std::vector<std::string>>("text");
  std::vector<std::string> sentences;
  for (const std::string& f : files) {
    opts.check_input("the --text file " + f, f);
    std::vector<std::string> lines = datasets::read_text_lines(f);
    sentences.insert(sentences.end(), std::make_move_iterator(lines.begin()), std::make_move_iterator(lines.end()));
  }
  data::SubwordTraining t;
  t.type = data::subword_type_from_string(opts.get<std::string>("type"));
  t.vocab_size = opts.get<int64_t>("vocab-size");
  t.character_coverage = opts.get<double>("character-coverage");
  t.normalization = opts.get<std::string>("normalization");
  t.threads = std::max<int64_t>(1, opts.get<int64_t>("threads"));
  const std::string model = data::train_subword_model(sentences, t);
  const std::string out = opts.get<std::string>("out");
  io::write_bytes(out, model);
  const data::SubwordModel m = data::SubwordModel::from_bytes(model, out);
  const int64_t pieces = std::accumulate(
      sentences.begin(), sentences.end(), int64_t{0},
      [&](int64_t n, const std::string& s) { return n + static_cast<int64_t>(m.encode(s).size()); });
  cli::print_summary(opts, opts.tool() + " subword: wrote " + (out == "-" ? "standard output" : out) + " (" +
                               data::subword_type_name(t.type) + ", " + std::to_string(m.pieces().size()) +
                               " pieces, from " + std::to_string(sentences.size()) + " lines; " +
                               std::to_string(pieces) + " pieces in them)");
  return 0;
}

}  // namespace attn::data_tool

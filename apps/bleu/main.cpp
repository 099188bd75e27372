// attn-bleu: corpus BLEU-4 of predictions against references (lib/metrics/bleu.hpp), printed
// on stdout in the form of multi-bleu.perl:
//   BLEU = 35.12, 66.7/40.6/28.0/19.9 (BP=0.978, ratio=0.978, hyp_len=12700, ref_len=12985)
//
// Hypotheses, one of:
//   --hyp PRED.h5     an attnlab output file with the predictions as token ids
//                       /predictions      int32 [N, L]  target ids; a row ends at its first EOS
//                                                       (2) or at /predictions_len; PAD (0) and
//                                                       BOS (1) are skipped
//                       /predictions_len  int32 [N]     optional: tokens per row
//                       /vocab/tgt        string [V]    the vocabulary of the ids
//                     or as text: /predictions_text string [N], tokens joined by spaces
//   --hyp-text FILE   one tokenised sentence a line (plain or gzip), tokens separated by spaces
// References, one of:
//   --ref DATA.h5 --split S   an attnlab translation data set (datasets/README.md): the raw
//                     lines /<S>/tgt_text, tokenised as the data set was (the /vocab attribute
//                     `lowercase`), when present; else /<S>/tgt decoded with /vocab/tgt (then
//                     out-of-vocabulary words are "<unk>" on both sides and BLEU reads high)
//   --ref-text FILE   as --hyp-text
// --tokenize applies the attnlab word tokeniser (with --lowercase, lower-cased) to both sides
// of text input first, for detokenised text files.
// Exit codes: 0 success, 2 usage error, 3 bad input (unreadable file, missing dataset, ids
// out of range, hypothesis and reference counts that differ).
#include <iostream>
#include <string_view>

#include "attn/data/tokenizer.hpp"
#include "attn/data/vocab.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/metrics/bleu.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"

namespace attn::bleu_tool {
namespace {

namespace po = boost::program_options;
using Corpus = std::vector<std::vector<std::string>>;

// Rows of an int32 [N, L] id matrix decoded with `vocab`, each cut at lens[i] when given.
Corpus decode_rows(const io::File& file, const std::string& ids_name, const std::string& len_name,
                   const data::Vocab& vocab) {
  const Tensor ids = file.read(ids_name, DType::i32, {kAny, kAny});
  const int64_t n = ids.dim(0), l = ids.dim(1);
  Tensor lens;
  if (!len_name.empty()) lens = file.read(len_name, DType::i32, {n});
  Corpus out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t len = l;
    if (lens.defined()) {
      len = lens.idata()[i];
      if (len < 0 || len > l)
        throw DataError(file.display_name() + ": " + len_name + "[" + std::to_string(i) + "] = " +
                        std::to_string(len) + " is outside [0, " + std::to_string(l) + "]");
    }
    try {
      out.push_back(vocab.decode({ids.idata() + i * l, static_cast<size_t>(len)}));
    } catch (const DataError& e) {
      throw DataError(file.display_name() + ": dataset '" + ids_name + "' row " + std::to_string(i) +
                      ": " + e.what() + " (of /vocab/tgt)");
    }
  }
  return out;
}

Corpus tokenise_lines(const std::vector<std::string>& lines, bool tokenize, bool lowercase) {
  Corpus out;
  out.reserve(lines.size());
  for (const std::string& line : lines)
    out.push_back(tokenize ? data::tokenize(line, {.lowercase = lowercase})
                           : data::split_whitespace(lowercase ? data::to_lower_utf8(line) : line));
  return out;
}

Corpus hypotheses_from_file(const std::string& path) {
  const io::File file = io::File::open_read(path);
  if (file.exists("/predictions_text"))
    return tokenise_lines(file.read_strings("/predictions_text"), false, false);
  if (!file.exists("/predictions"))
    throw FormatError(file.display_name() + ": no dataset '/predictions' (int32 [N, L] ids with "
                      "/vocab/tgt) or '/predictions_text' (strings); write it with the model's "
                      "translate verb");
  const data::Vocab vocab = data::read_vocab(file, "/vocab/tgt");
  return decode_rows(file, "/predictions", file.exists("/predictions_len") ? "/predictions_len" : "", vocab);
}

Corpus references_from_file(const std::string& path, const std::string& split, bool quiet) {
  const io::File file = io::File::open_read(path);
  const std::string g = "/" + split;
  if (file.exists(g + "/tgt_text")) {
    const bool lowercase = file.has_attr("/vocab", "lowercase") && file.attr_int("/vocab", "lowercase") != 0;
    return tokenise_lines(file.read_strings(g + "/tgt_text"), true, lowercase);
  }
  if (!quiet)
    std::cerr << "attn-bleu: " << file.display_name() << " has no '" << g << "/tgt_text'; scoring "
              << "against the ids of '" << g << "/tgt', where unknown words are <unk>\n";
  return decode_rows(file, g + "/tgt", g + "/tgt_len", data::read_vocab(file, "/vocab/tgt"));
}

int cmd_score(int argc, char** argv) {
  cli::Options opts("attn-bleu", "(--hyp PRED.h5 | --hyp-text FILE) (--ref DATA.h5 | --ref-text FILE) [options]",
                    "Corpus BLEU-4 (Papineni et al. 2002) of the hypotheses against one reference each,\n"
                    "printed as 'BLEU = 35.12, p1/p2/p3/p4 (BP=..., ratio=..., hyp_len=..., ref_len=...)'.\n"
                    "Prediction layout and reference sources: apps/bleu/main.cpp, datasets/README.md.");
  opts.split("test");
  opts.add()
      ("hyp", po::value<std::string>()->value_name("FILE"), "predictions, HDF5 (/predictions + /vocab/tgt)")
      ("hyp-text", po::value<std::string>()->value_name("FILE"), "predictions, tokenised text, one a line")
      ("ref", po::value<std::string>()->value_name("FILE"), "translation data set, HDF5 (references of --split)")
      ("ref-text", po::value<std::string>()->value_name("FILE"), "references, tokenised text, one a line")
      ("tokenize", po::bool_switch(), "tokenise text input with the attnlab word tokeniser first")
      ("lowercase", po::bool_switch(), "lower-case text input first");
  if (!opts.parse(argc, argv)) return 0;
  const auto one_of = [&](const char* a, const char* b) {
    if (opts.has(a) == opts.has(b))
      throw ConfigError(std::string("give exactly one of --") + a + " and --" + b);
  };
  one_of("hyp", "hyp-text");
  one_of("ref", "ref-text");
  const bool tokenize = opts.get<bool>("tokenize"), lowercase = opts.get<bool>("lowercase");

  const Corpus hyps = opts.has("hyp")
      ? hypotheses_from_file(opts.get<std::string>("hyp"))
      : tokenise_lines(datasets::read_text_lines(opts.get<std::string>("hyp-text")), tokenize, lowercase);
  const Corpus refs = opts.has("ref")
      ? references_from_file(opts.get<std::string>("ref"), opts.get<std::string>("split"), opts.quiet())
      : tokenise_lines(datasets::read_text_lines(opts.get<std::string>("ref-text")), tokenize, lowercase);
  if (hyps.size() != refs.size())
    throw DataError(std::to_string(hyps.size()) + " hypotheses but " + std::to_string(refs.size()) +
                    " references: they must pair up line by line (is --split right?)");
  std::cout << metrics::format_bleu(metrics::corpus_bleu(hyps, refs)) << "\n";
  return 0;
}

}  // namespace
}  // namespace attn::bleu_tool

int main(int argc, char** argv) {
  // attn-bleu does one thing; its verb `score` may be left out: `attn-bleu --hyp ... --ref ...`.
  std::vector<char*> args(argv, argv + argc);
  static char score[] = "score";
  if (argc < 2 || (std::string_view(argv[1]) != "score" && std::string_view(argv[1]) != "--version"))
    args.insert(args.begin() + 1, score);
  return attn::cli::dispatch("attn-bleu", static_cast<int>(args.size()), args.data(),
                             {{"score", attn::bleu_tool::cmd_score, "corpus BLEU of predictions against references"}});
}

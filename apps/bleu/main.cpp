// attn-bleu: corpus BLEU-4 of predictions against references (attn/metrics/bleu.hpp), printed
// on stdout in the form of multi-bleu.perl:
//   BLEU = 35.12, 66.7/40.6/28.0/19.9 (BP=0.978, ratio=0.978, hyp_len=12700, ref_len=12985)
//
// Hypotheses, one of:
//   --hyp PRED.h5     an attnlab output file with the predictions as token ids
//                       /predictions      int32 [N, Lmax]  target ids; a row ends at its first
//                                                          EOS (2) or at /predictions_len; PAD (0)
//                                                          and BOS (1) are skipped
//                       /predictions_len  int32 [N]        optional: tokens per row
//                       /vocab/tgt        string [V]       the vocabulary of the ids
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
// By source length (Bahdanau et al. 2015, Figure 2): --by-length W (buckets 1-W, W+1-2W, ...) or
// --buckets U1,U2,... (inclusive upper bounds; longer sources form one more bucket) also scores
// each bucket as a corpus of its own and prints a table after the BLEU line. The lengths are
// /<split>/src_len of --ref DATA.h5 (attn/metrics/bleu_buckets.hpp).
// --out FILE.h5 writes the scores (/metrics attributes, /by_length/{lower,upper,sentences,bleu,
// brevity_penalty}) for attn-plot curve --series /by_length/upper:/by_length/bleu.
// Exit codes: 0 success, 1 the --out file cannot be written, 2 usage error, 3 bad input
// (unreadable file, missing dataset, ids out of range, hypothesis and reference counts that
// differ).
#include <algorithm>
#include <iostream>
#include <string_view>

#include "attn/data/corpus.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/metrics/bleu.hpp"
#include "attn/metrics/bleu_buckets.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"

namespace attn::bleu_tool {
namespace {

namespace po = boost::program_options;
using data::Corpus;

// The bucket bounds of --by-length W, or `given` (--buckets).
std::vector<int64_t> bucket_bounds(const cli::Options& opts, std::vector<int64_t> given,
                                   const std::vector<int32_t>& lengths) {
  if (!opts.has("by-length")) return given;
  const int32_t longest = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  return metrics::uniform_length_buckets(opts.get<int64_t>("by-length"), longest);
}

int cmd_score(int argc, char** argv) {
  cli::Options opts("attn-bleu", "(--hyp PRED.h5 | --hyp-text FILE) (--ref DATA.h5 | --ref-text FILE) [options]",
                    "Corpus BLEU-4 (Papineni et al. 2002) of the hypotheses against one reference each,\n"
                    "printed as 'BLEU = 35.12, p1/p2/p3/p4 (BP=..., ratio=..., hyp_len=..., ref_len=...)'.\n"
                    "Prediction layout and reference sources: apps/bleu/main.cpp, datasets/README.md.");
  opts.split("test");
  // clang-format off
  opts.add()
      ("hyp", po::value<std::string>()->value_name("FILE"), "predictions, HDF5 (/predictions + /vocab/tgt)")
      ("hyp-text", po::value<std::string>()->value_name("FILE"), "predictions, tokenised text, one a line")
      ("ref", po::value<std::string>()->value_name("FILE"), "translation data set, HDF5 (references of --split)")
      ("ref-text", po::value<std::string>()->value_name("FILE"), "references, tokenised text, one a line")
      ("tokenize", po::bool_switch(), "tokenise text input with the attnlab word tokeniser first")
      ("lowercase", po::bool_switch(), "lower-case text input first")
      ("by-length", po::value<int64_t>()->value_name("W")->notifier(cli::positive<int64_t>("by-length")),
       "also score by source length in buckets of W tokens (1-W, W+1-2W, ...; needs --ref DATA.h5, "
       "whose /<split>/src_len gives the lengths)")
      ("buckets", po::value<std::string>()->value_name("U1,U2,..."),
       "also score by source length in buckets with these inclusive upper bounds, and one bucket "
       "for longer sources (needs --ref DATA.h5)")
      ("out", po::value<std::string>()->value_name("FILE"),
       "also write the scores to HDF5 (/metrics; /by_length/{lower,upper,sentences,bleu} with buckets)");
  // clang-format on
  if (!opts.parse(argc, argv)) return 0;
  const auto one_of = [&](const char* a, const char* b) {
    if (opts.has(a) == opts.has(b))
      throw ConfigError(std::string("give exactly one of --") + a + " and --" + b);
  };
  one_of("hyp", "hyp-text");
  one_of("ref", "ref-text");
  if (opts.has("by-length") && opts.has("buckets")) throw ConfigError("give at most one of --by-length and --buckets");
  const bool by_length = opts.has("by-length") || opts.has("buckets");
  if (by_length && !opts.has("ref"))
    throw ConfigError("--by-length and --buckets need --ref DATA.h5: the source lengths are its /<split>/src_len");
  const std::vector<int64_t> given_bounds =   // their order is checked by bleu_by_length (ConfigError)
      opts.has("buckets") ? cli::parse_int_list("buckets", opts.get<std::string>("buckets")) : std::vector<int64_t>{};
  // With --out -, stdout carries the HDF5 image and the scores go to stderr.
  std::ostream& text = opts.has("out") && opts.get<std::string>("out") == "-" ? std::cerr : std::cout;
  const bool tokenize = opts.get<bool>("tokenize"), lowercase = opts.get<bool>("lowercase");
  const std::string split = opts.get<std::string>("split");

  const Corpus hyps = opts.has("hyp")
      ? data::read_hypotheses(io::File::open_read(opts.get<std::string>("hyp")))
      : data::tokenise_lines(datasets::read_text_lines(opts.get<std::string>("hyp-text")), tokenize, lowercase);
  Corpus refs;
  std::vector<int32_t> lengths;
  if (opts.has("ref")) {
    const io::File ref = io::open_dataset(opts.get<std::string>("ref"));
    data::References r = data::read_references(ref, split);
    if (r.from_ids && !opts.quiet())
      std::cerr << "attn-bleu: " << ref.display_name() << " has no '/" << split << "/tgt_text'; scoring against "
                << "the ids of '/" << split << "/tgt', where unknown words are <unk>\n";
    refs = std::move(r.sentences);
    if (by_length) {
      lengths = data::read_source_lengths(ref, split);
      if (lengths.size() != refs.size())
        throw DataError(ref.display_name() + ": '/" + split + "/src_len' has " + std::to_string(lengths.size()) +
                        " lengths for " + std::to_string(refs.size()) + " references");
    }
  } else {
    refs = data::tokenise_lines(datasets::read_text_lines(opts.get<std::string>("ref-text")), tokenize, lowercase);
  }
  if (hyps.size() != refs.size())
    throw DataError(std::to_string(hyps.size()) + " hypotheses but " + std::to_string(refs.size()) +
                    " references: they must pair up line by line (is --split right?)");

  const metrics::BleuScore total = metrics::corpus_bleu(hyps, refs);
  text << metrics::format_bleu(total) << "\n";
  std::vector<metrics::LengthBucket> buckets;
  if (by_length) {
    buckets = metrics::bleu_by_length(hyps, refs, lengths, bucket_bounds(opts, given_bounds, lengths));
    text << metrics::format_length_table(buckets);
  }
  if (opts.has("out"))
    cli::write_output(opts, "attnlab/output", "bleu", [&](io::File& file) {
      metrics::write_bleu_scores(file, total, static_cast<int64_t>(hyps.size()), buckets);
    });
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

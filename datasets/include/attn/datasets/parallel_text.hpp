// Parallel text corpora (a source and a target file, line i of one translating line i of the
// other) imported into the token layout of the translation data sets: Multi30k (Elliott et al.
// 2016) and any other aligned pair.
//
// Pipeline: read the lines (plain or gzip), tokenise both sides (attn/data/tokenizer.hpp,
// optional lower-casing), drop the pairs with an empty side, build one vocabulary per side from
// the training split only (min_freq, max size; attn/data/vocab.hpp), then encode every split:
//   /<split>/src      [N, S] int32  source ids, no BOS or EOS, padded with 0; S = longest in split
//   /<split>/src_len  [N]    int32
//   /<split>/tgt      [N, T] int32  target ids then EOS (2), padded with 0
//   /<split>/tgt_len  [N]    int32  counts the EOS
//   /valid/src_text, /valid/tgt_text, /test/src_text, /test/tgt_text  [N] strings: the
//                     original lines of the kept pairs (whitespace-trimmed, untokenised, cased),
//                     the references BLEU is scored against (attn-bleu tokenises them as below)
//   /vocab/src, /vocab/tgt  [V] strings, ids 0-3 "<pad>" "<s>" "</s>" "<unk>"
//   /vocab attributes: tokenizer = "attnlab-word-1" (the rules of tokenizer.hpp) or
//                     "sentencepiece" (the models in /vocab/src_subword, /vocab/tgt_subword),
//                     lowercase (int64 0/1): how to tokenise new text for this vocabulary
//   /<split> attributes: lines (read), dropped (pairs left out: an empty side, or longer than
//                     max_len in train)
// The layout and the options are documented in datasets/README.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <memory>

#include "attn/data/subword.hpp"
#include "attn/data/tokenizer.hpp"
#include "attn/data/vocab.hpp"
#include "attn/datasets/splits.hpp"
#include "attn/datasets/toy_translation.hpp"

namespace attn::io { class File; }

namespace attn::datasets {

inline constexpr const char* kTokenizerName = "attnlab-word-1";
inline constexpr const char* kSubwordTokenizerName = "sentencepiece";

// The lines of a text file, plain or gzip (detected by content, through zlib), without their
// line ends ("\n" or "\r\n"); a final line end does not start an empty line. Throws IoError
// when the file cannot be opened or read, DataError naming the file on a truncated or corrupt
// gzip stream (gzip_file.hpp), and naming file and line on invalid UTF-8.
std::vector<std::string> read_text_lines(const std::string& path);

// The raw lines of one split: src[i] translates to tgt[i].
struct TextPairs {
  std::vector<std::string> src, tgt;
};

// Reads a source and a target file and checks that they have the same number of lines
// (DataError naming both files otherwise).
TextPairs read_text_pairs(const std::string& src_path, const std::string& tgt_path);

// Multi30k task 1 from `dir`: train.<lang>.gz, val.<lang>.gz and test_2016_flickr.<lang>.gz
// as the splits train, valid and test.
Splits<TextPairs> read_multi30k(const std::string& dir, const std::string& src_lang,
                                const std::string& tgt_lang);

struct ParallelConfig {
  data::TokenizeOptions tokenize;   // lowercase
  data::VocabOptions src_vocab;     // built from the training split
  data::VocabOptions tgt_vocab;
  int64_t max_len = 0;              // drop training pairs with a side longer than this; 0: keep all
  std::optional<data::Vocab> vocab; // set: both sides are encoded with this vocabulary (that of
                                    // another data set) instead of ones built from train
  bool one_text = false;            // both sides are one text (attn-data text): messages speak of lines
  // Set: that side is split into a SentencePiece model's pieces (after lower-casing with
  // tokenize.lowercase) instead of tokenised, and its vocabulary is the model's (data/subword.hpp;
  // the vocabulary options above do not apply to it). Both sides or neither.
  std::shared_ptr<const data::SubwordModel> src_subword, tgt_subword;
};

struct ParallelSplit {
  TokenSplit tokens;                       // src, src_len, tgt, tgt_len as above
  std::vector<std::string> src_text, tgt_text;   // the kept raw lines (trimmed)
  int64_t lines = 0, dropped = 0;
};

struct ParallelData {
  Splits<ParallelSplit> splits;
  data::Vocab src_vocab, tgt_vocab;
  data::TokenizeOptions tokenize;
};

// Tokenises, builds the vocabularies and encodes every split (see above). Throws ConfigError on
// bad options and DataError when the training split keeps no pair.
ParallelData build_parallel(const Splits<TextPairs>& text, const ParallelConfig& cfg);

// Writes the layout above (the caller has created the file and its root attributes).
void write_parallel(io::File& file, const ParallelData& data);

}  // namespace attn::datasets

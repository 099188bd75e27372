// Token corpora for scoring translations (attn-bleu, BLEU on the validation set): hypotheses from
// a translation output file, references from a translation data set, both as token lists that
// compare word for word.
//
// Hypotheses (a file written by a translate verb, train/token_run.hpp): /predictions_text
// (strings, tokens joined by spaces) when present, else /predictions (int32 [N, Lmax] ids; a row ends
// at /predictions_len when present; PAD and BOS skipped, a row cut at its first EOS) decoded with
// /vocab/tgt. A subword model's hypotheses (the file has /vocab/tgt_subword) are the words of their
// detokenised text instead (/predictions_detok, else the decoded pieces detokenised), tokenised
// as the references are.
// References (a translation data set, datasets/README.md): the raw lines /<split>/tgt_text,
// tokenised as the data set was (its /vocab attribute `lowercase`), when present; else
// /<split>/tgt decoded with /vocab/tgt (then words outside the vocabulary are "<unk>" on both
// sides and BLEU reads high).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/io/hdf5_file.hpp"

namespace attn::data {

using Corpus = std::vector<std::vector<std::string>>;

// Each line as tokens: the attnlab tokeniser when `tokenize`, else split at whitespace; lower-
// cased first when `lowercase`.
Corpus tokenise_lines(const std::vector<std::string>& lines, bool tokenize, bool lowercase);

// The hypotheses of a translation output file (see above). FormatError naming the file without
// either dataset; DataError naming the row for a length or id out of range.
Corpus read_hypotheses(const io::File& file);

struct References {
  Corpus sentences;
  bool from_ids = false;   // no /<split>/tgt_text: decoded ids, unknown words as <unk>
};
// The references of `split` of a translation data set (see above).
References read_references(const io::File& file, const std::string& split);

// /<split>/src_len: every sentence's source length (for BLEU by length). FormatError naming the
// file when absent.
std::vector<int32_t> read_source_lengths(const io::File& file, const std::string& split);

}  // namespace attn::data

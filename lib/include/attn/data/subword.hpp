// Subword units: SentencePiece models (Kudo & Richardson 2018, "SentencePiece: A simple and
// language independent subword tokenizer and detokenizer"), trained and applied through Debian's
// libsentencepiece, the library fairseq's, OpenNMT's and Marian's users make their vocabularies
// with. BPE (Sennrich et al. 2016) and unigram (Kudo 2018) models.
//
// Ids. A model trained here gives the reserved pieces attnlab's ids (data/vocab.hpp): <pad> 0,
// <s> 1, </s> 2, <unk> 3, so that a piece's id in the model is its token id in a data set and in
// a trained model; its vocabulary is its pieces in id order (Vocab::from_subword keeps the model
// with them, and write_vocab stores it beside them). A model made elsewhere is accepted only with
// the same four (SubwordModel refuses it otherwise, naming what it found).
//
// Text. Encoding normalises first (the model's rule, chosen at training: nmt_nfkc, SentencePiece's
// default, applies Unicode NFKC and folds white space and some control characters; identity keeps
// the text as it is), marks word starts with "▁" (U+2581) and splits into pieces; decoding joins
// the pieces and turns "▁" back into spaces. So decode(encode(s)) == s exactly when s is already
// normalised: with nmt_nfkc, runs of spaces become one, leading and trailing spaces go, and NFKC
// folds compatibility characters (the ligature "ﬁ" becomes "fi", full-width letters ASCII).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attn/data/vocab.hpp"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace attn::data {

enum class SubwordType { bpe, unigram };
const char* subword_type_name(SubwordType type);
SubwordType subword_type_from_string(const std::string& name);   // "bpe", "unigram"

struct SubwordTraining {
  SubwordType type = SubwordType::bpe;
  int64_t vocab_size = 8000;                // pieces, the 4 reserved included
  double character_coverage = 1.0;          // of the training text's characters, in (0, 1]
  std::string normalization = "nmt_nfkc";   // SentencePiece's rule name: nmt_nfkc, nfkc, identity, ...
  int64_t threads = 1;                      // SentencePiece's trainer threads (1: reproducible)
};

// Trains a model on `sentences` (one per element, UTF-8; the training split's raw text) and
// returns it serialized: the bytes of a SentencePiece .model file. ConfigError for options out of
// range (naming them), DataError when SentencePiece refuses the text (e.g. a vocabulary larger
// than the text allows: its message is passed on).
std::string train_subword_model(const std::vector<std::string>& sentences, const SubwordTraining& options);

class SubwordModel {
 public:
  // From a model's serialized bytes. FormatError naming `source` when they are not a
  // SentencePiece model, or its reserved pieces are not attnlab's.
  static SubwordModel from_bytes(std::string bytes, const std::string& source);
  // From a .model file (IoError when it cannot be read; FormatError as from_bytes).
  static SubwordModel load(const std::string& path);

  // The pieces of one sentence (normalised first, see above). DataError when the text is not UTF-8.
  std::vector<std::string> encode(std::string_view text) const;
  // The text of pieces (the reserved pieces dropped).
  std::string decode(const std::vector<std::string>& pieces) const;
  // The pieces in id order: the data set's and the model's vocabulary (Vocab::from_subword).
  const std::vector<std::string>& pieces() const { return pieces_; }
  // The serialized model, as stored in data sets and model files.
  const std::string& bytes() const { return bytes_; }
  const std::string& source() const { return source_; }

 private:
  std::shared_ptr<const sentencepiece::SentencePieceProcessor> processor_;
  std::string bytes_, source_;
  std::vector<std::string> pieces_;
};

// Whether `text` is well-formed UTF-8; otherwise the byte offset of the first bad sequence.
bool valid_utf8(std::string_view text, size_t* bad_offset = nullptr);

}  // namespace attn::data

// Vocabularies: token <-> id maps built from token counts, with the reserved ids every attnlab
// token data set shares, and their storage as UTF-8 string arrays in HDF5.
//
// Ids 0-3 are reserved (DESIGN.md, "HDF5 conventions"): 0 "<pad>" padding, 1 "<s>" BOS (the
// decoder's first input), 2 "</s>" EOS, 3 "<unk>" any token not in the vocabulary. Real tokens
// follow from id 4 in a deterministic order: count descending, then the token's bytes
// ascending, so the same corpus always gives the same ids on every machine.
// A vocabulary is stored as the string dataset of its tokens in id order (`/vocab/src`):
// position i holds the token of id i.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attn::io { class File; }

namespace attn::data {

inline constexpr int32_t kPad = 0, kBos = 1, kEos = 2, kUnk = 3;
inline constexpr int32_t kNumReserved = 4;
inline constexpr const char* kReservedTokens[kNumReserved] = {"<pad>", "<s>", "</s>", "<unk>"};

// PAD and BOS are never training targets, so a decoder must never emit them; an undertrained
// model can still give them the top logit. Sets their logits to -inf in each of `rows` rows of
// [rows, V] logits, so that greedy search, beam search and sampling all pass them over.
inline void forbid_unproducible(float* logits, int64_t rows, int64_t V) {
  for (int64_t r = 0; r < rows; ++r)
    for (int32_t id : {kPad, kBos})
      if (id < V) logits[r * V + id] = -std::numeric_limits<float>::infinity();
}

// Hashing std::string and std::string_view alike, so lookups need no temporary string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenCounts = std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>;

// Adds one to counts[t] for every token t of a sentence.
void count_tokens(const std::vector<std::string>& tokens, TokenCounts& counts);

struct VocabOptions {
  int64_t min_freq = 1;   // keep tokens seen at least this often (>= 1)
  int64_t max_size = 0;   // at most this many ids, the 4 reserved included; 0: no limit (else >= 5)
};

class SubwordModel;

// The suffix of the dataset beside a vocabulary's that holds its subword model (write_vocab).
inline constexpr const char* kSubwordSuffix = "_subword";

class Vocab {
 public:
  Vocab();   // only the reserved tokens

  // The tokens with count >= min_freq, most frequent first (ties: bytes ascending), cut to
  // max_size. Counts of the reserved token strings themselves are ignored. Throws ConfigError
  // on min_freq < 1 or 0 < max_size < 5.
  static Vocab build(const TokenCounts& counts, const VocabOptions& opts = {});
  // From the tokens in id order (as stored). Throws FormatError unless ids 0-3 are the reserved
  // tokens and every token is distinct and non-empty; `what` names the source in the message
  // ("m30k.h5: dataset '/vocab/src'").
  static Vocab from_tokens(std::vector<std::string> tokens, const std::string& what = "vocabulary");
  // A subword model's vocabulary: its pieces in id order, the model kept with it (subword.hpp),
  // so that whatever stores or reads the vocabulary carries the model on.
  static Vocab from_subword(std::shared_ptr<const SubwordModel> model);
  // The subword model the ids are pieces of; null for a word vocabulary.
  const SubwordModel* subword() const { return subword_.get(); }
  // Tokens (decode's output) as text for reading: a subword model's detokenisation (its pieces
  // joined, "▁" as spaces), else data::detokenize's rules for words.
  std::string detokenize(const std::vector<std::string>& tokens) const;

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::vector<std::string>& tokens() const { return tokens_; }

  // The id of a token, kUnk when absent.
  int32_t id(std::string_view token) const;
  bool contains(std::string_view token) const { return index_.find(token) != index_.end(); }
  // The token of an id; throws DataError when id is outside [0, size).
  const std::string& token(int32_t id) const;

  // Tokens to ids (unknown tokens -> kUnk); no BOS or EOS is added.
  std::vector<int32_t> encode(const std::vector<std::string>& tokens) const;
  // Ids to tokens for output: stops at the first EOS and skips PAD and BOS, so a padded row or
  // a decoder's output reads as the sentence. UNK stays "<unk>". Ids out of range throw DataError.
  std::vector<std::string> decode(std::span<const int32_t> ids) const;

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> index_;
  std::shared_ptr<const SubwordModel> subword_;
};

// Stores the vocabulary as the UTF-8 string dataset `dataset` (e.g. "/vocab/tgt"), and a subword
// vocabulary's model beside it as the uint8 dataset `dataset` + "_subword" (the SentencePiece
// .model bytes, e.g. "/vocab/tgt_subword").
void write_vocab(io::File& file, const std::string& dataset, const Vocab& vocab);
// Reads and validates it (Vocab::from_tokens), with its subword model when the file has one
// (FormatError naming the file and dataset when the model is not one, or its pieces are not the
// vocabulary's); io errors propagate.
Vocab read_vocab(const io::File& file, const std::string& dataset);

}  // namespace attn::data

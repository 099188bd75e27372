// Vocabulary construction, lookup and HDF5 storage (see vocab.hpp).
#include "attn/data/vocab.hpp"

#include <algorithm>

#include "attn/core/error.hpp"
#include "attn/data/subword.hpp"
#include "attn/data/tokenizer.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::data {
namespace {

bool is_reserved(std::string_view token) {
  for (const char* r : kReservedTokens)
    if (token == r) return true;
  return false;
}

}  // namespace

void count_tokens(const std::vector<std::string>& tokens, TokenCounts& counts) {
  for (const std::string& t : tokens) {
    auto it = counts.find(std::string_view(t));
    if (it == counts.end()) counts.emplace(t, 1);
    else ++it->second;
  }
}

Vocab::Vocab() : tokens_(kReservedTokens, kReservedTokens + kNumReserved) {
  for (int32_t i = 0; i < kNumReserved; ++i) index_.emplace(tokens_[static_cast<size_t>(i)], i);
}

Vocab Vocab::build(const TokenCounts& counts, const VocabOptions& opts) {
  if (opts.min_freq < 1)
    throw ConfigError("vocabulary: min_freq must be >= 1, got " + std::to_string(opts.min_freq));
  if (opts.max_size != 0 && opts.max_size <= kNumReserved)
    throw ConfigError("vocabulary: max_size must be 0 (no limit) or > 4 (the reserved ids), got " +
                      std::to_string(opts.max_size));
  std::vector<std::pair<std::string_view, int64_t>> kept;
  for (const auto& [token, count] : counts)
    if (count >= opts.min_freq && !token.empty() && !is_reserved(token)) kept.emplace_back(token, count);
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (opts.max_size != 0 && static_cast<int64_t>(kept.size()) > opts.max_size - kNumReserved)
    kept.resize(static_cast<size_t>(opts.max_size - kNumReserved));

  std::vector<std::string> tokens(kReservedTokens, kReservedTokens + kNumReserved);
  tokens.reserve(kept.size() + kNumReserved);
  for (const auto& [token, count] : kept) tokens.emplace_back(token);
  return from_tokens(std::move(tokens));
}

Vocab Vocab::from_tokens(std::vector<std::string> tokens, const std::string& what) {
  if (tokens.size() < static_cast<size_t>(kNumReserved))
    throw FormatError(what + ": has " + std::to_string(tokens.size()) +
                      " tokens, expected at least the 4 reserved ones <pad> <s> </s> <unk>");
  if (tokens.size() > static_cast<size_t>(INT32_MAX))
    throw FormatError(what + ": more than 2^31 - 1 tokens");
  for (int32_t i = 0; i < kNumReserved; ++i)
    if (tokens[i] != kReservedTokens[i])
      throw FormatError(what + ": id " + std::to_string(i) + " is '" + tokens[i] + "', expected '" +
                        kReservedTokens[i] + "' (ids 0-3 are <pad> <s> </s> <unk>)");
  Vocab v;
  v.tokens_ = std::move(tokens);
  v.index_.clear();
  v.index_.reserve(v.tokens_.size());
  for (size_t i = 0; i < v.tokens_.size(); ++i) {
    const std::string& t = v.tokens_[i];
    if (t.empty()) throw FormatError(what + ": id " + std::to_string(i) + " is the empty string");
    if (!v.index_.emplace(t, static_cast<int32_t>(i)).second)
      throw FormatError(what + ": token '" + t + "' occurs twice (ids " + std::to_string(v.index_.at(t)) +
                        " and " + std::to_string(i) + ")");
  }
  return v;
}

int32_t Vocab::id(std::string_view token) const {
  const auto it = index_.find(token);
  return it == index_.end() ? kUnk : it->second;
}

const std::string& Vocab::token(int32_t id) const {
  if (id < 0 || id >= size())
    throw DataError("vocabulary: id " + std::to_string(id) + " is outside [0, " + std::to_string(size()) + ")");
  return tokens_[static_cast<size_t>(id)];
}

std::vector<int32_t> Vocab::encode(const std::vector<std::string>& tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& t : tokens) ids.push_back(id(t));
  return ids;
}

std::vector<std::string> Vocab::decode(std::span<const int32_t> ids) const {
  std::vector<std::string> out;
  for (const int32_t i : ids) {
    if (i == kEos) break;
    if (i == kPad || i == kBos) continue;
    out.push_back(token(i));
  }
  return out;
}

Vocab Vocab::from_subword(std::shared_ptr<const SubwordModel> model) {
  Vocab v = from_tokens(model->pieces(), model->source() + ": the SentencePiece model's pieces");
  v.subword_ = std::move(model);
  return v;
}

std::string Vocab::detokenize(const std::vector<std::string>& tokens) const {
  return subword_ ? subword_->decode(tokens) : data::detokenize(tokens);
}

void write_vocab(io::File& file, const std::string& dataset, const Vocab& vocab) {
  file.write_strings(dataset, vocab.tokens());
  if (const SubwordModel* m = vocab.subword()) {
    const std::string& bytes = m->bytes();
    Tensor t({static_cast<int64_t>(bytes.size())}, DType::i32);
    for (size_t i = 0; i < bytes.size(); ++i) t.idata()[i] = static_cast<unsigned char>(bytes[i]);
    io::WriteOptions o;
    o.as_uint8 = true;
    file.write(dataset + kSubwordSuffix, t, o);
  }
}

Vocab read_vocab(const io::File& file, const std::string& dataset) {
  const std::string what = file.display_name() + ": dataset '" + dataset + "'";
  Vocab v = Vocab::from_tokens(file.read_strings(dataset), what);
  const std::string model_dataset = dataset + kSubwordSuffix;
  if (!file.exists(model_dataset)) return v;
  const Tensor t = file.read(model_dataset, DType::i32, {kAny});
  std::string bytes(static_cast<size_t>(t.numel()), '\0');
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int32_t b = t.idata()[i];
    if (b < 0 || b > 255)
      throw FormatError(file.display_name() + ": dataset '" + model_dataset + "' holds " + std::to_string(b) + " at " +
                        std::to_string(i) + ", expected bytes (0..255)");
    bytes[static_cast<size_t>(i)] = static_cast<char>(b);
  }
  auto model = std::make_shared<const SubwordModel>(
      SubwordModel::from_bytes(std::move(bytes), file.display_name() + ": dataset '" + model_dataset + "'"));
  if (model->pieces() != v.tokens())
    throw FormatError(file.display_name() + ": dataset '" + model_dataset + "' is a SentencePiece model of " +
                      std::to_string(model->pieces().size()) + " pieces that are not '" + dataset + "' (" +
                      std::to_string(v.size()) + " tokens): the vocabulary and its model disagree");
  return Vocab::from_subword(std::move(model));
}

}  // namespace attn::data

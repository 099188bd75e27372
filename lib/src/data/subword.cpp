// SentencePiece models through libsentencepiece (subword.hpp): training from sentences in memory,
// loading from bytes, encoding and decoding, and the checks that tie a model's ids to attnlab's.
#include "attn/data/subword.hpp"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "attn/core/enum_names.hpp"
#include "attn/core/error.hpp"

namespace attn::data {
namespace {

constexpr EnumNames<SubwordType, 2> kTypeNames{{{SubwordType::bpe, "bpe"}, {SubwordType::unigram, "unigram"}}};

// The sentences in memory as SentencePiece's trainer reads them.
class Sentences final : public sentencepiece::SentenceIterator {
 public:
  explicit Sentences(const std::vector<std::string>& s) : s_(s) {}
  bool done() const override { return i_ >= s_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return s_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& s_;
  size_t i_ = 0;
};

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

const char* subword_type_name(SubwordType type) { return enum_name(kTypeNames, type); }
SubwordType subword_type_from_string(const std::string& name) { return parse_enum(kTypeNames, "subword type", name); }

bool valid_utf8(std::string_view text, size_t* bad_offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    size_t len = 0;
    uint32_t min = 0, cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000, cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (p[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
    if (!ok || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    i += len;
  }
  return true;
}

std::string train_subword_model(const std::vector<std::string>& sentences, const SubwordTraining& o) {
  if (o.vocab_size < kNumReserved + 1 || o.vocab_size > (int64_t{1} << 24))
    throw ConfigError("subword model: vocab_size must be in [" + std::to_string(kNumReserved + 1) + ", 2^24], got " +
                      std::to_string(o.vocab_size));
  if (!(o.character_coverage > 0.0 && o.character_coverage <= 1.0))
    throw ConfigError("subword model: character_coverage must be in (0, 1], got " + number(o.character_coverage));
  if (o.threads < 1) throw ConfigError("subword model: threads must be >= 1, got " + std::to_string(o.threads));
  if (sentences.empty()) throw DataError("subword model: no training sentences");
  for (size_t i = 0; i < sentences.size(); ++i) {
    size_t at = 0;
    if (!valid_utf8(sentences[i], &at))
      throw DataError("subword model: training sentence " + std::to_string(i + 1) + " is not UTF-8 (byte " +
                      std::to_string(at) + ")");
  }
  const std::unordered_map<std::string, std::string> args{
      {"model_type", subword_type_name(o.type)},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", number(o.character_coverage)},
      {"normalization_rule_name", o.normalization},
      {"num_threads", std::to_string(o.threads)},
      {"pad_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"unk_id", "3"},
      {"pad_piece", kReservedTokens[kPad]},
      {"bos_piece", kReservedTokens[kBos]},
      {"eos_piece", kReservedTokens[kEos]},
      {"unk_piece", kReservedTokens[kUnk]},
      {"input_sentence_size", "0"},   // every sentence, in order: no sampling
      {"shuffle_input_sentence", "false"},
      {"minloglevel", "2"},   // SentencePiece's progress log off (errors still come back as a status)
  };
  Sentences it(sentences);
  std::string model;
  const sentencepiece::util::Status st = sentencepiece::SentencePieceTrainer::Train(args, &it, &model);
  if (!st.ok()) {
    const std::string why = st.ToString();
    if (why.find("normaliz") != std::string::npos)
      throw ConfigError("subword model: normalization '" + o.normalization + "': " + why);
    throw DataError("subword model: SentencePiece cannot train on this text with these options: " + why);
  }
  return model;
}

SubwordModel SubwordModel::from_bytes(std::string bytes, const std::string& source) {
  auto processor = std::make_shared<sentencepiece::SentencePieceProcessor>();
  const sentencepiece::util::Status st = processor->LoadFromSerializedProto(bytes);
  if (!st.ok()) throw FormatError(source + ": not a SentencePiece model (" + st.ToString() + ")");
  const int size = processor->GetPieceSize();
  std::vector<std::string> pieces;
  pieces.reserve(static_cast<size_t>(size));
  for (int id = 0; id < size; ++id) pieces.push_back(processor->IdToPiece(id));
  for (int32_t id = 0; id < kNumReserved; ++id)
    if (size <= id || pieces[static_cast<size_t>(id)] != kReservedTokens[id])
      throw FormatError(source + ": a SentencePiece model whose id " + std::to_string(id) + " is '" +
                        (size <= id ? std::string() : pieces[static_cast<size_t>(id)]) + "', expected '" +
                        kReservedTokens[id] + "' (attnlab's reserved ids: train it with attn-data subword, or with " +
                        "--pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3 --pad_piece=<pad>)");
  (void)Vocab::from_tokens(pieces, source + ": the SentencePiece model's pieces");   // distinct, non-empty
  SubwordModel m;
  m.pieces_ = std::move(pieces);
  m.processor_ = std::move(processor);
  m.bytes_ = std::move(bytes);
  m.source_ = source;
  return m;
}

SubwordModel SubwordModel::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open the SentencePiece model (" + std::strerror(errno) + ")");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw IoError(path + ": cannot read the SentencePiece model");
  return from_bytes(std::move(bytes).str(), path);
}

std::vector<std::string> SubwordModel::encode(std::string_view text) const {
  size_t at = 0;
  if (!valid_utf8(text, &at))
    throw DataError("subword model " + source_ + ": the text is not UTF-8 (byte " + std::to_string(at) + ")");
  std::vector<std::string> pieces;
  const sentencepiece::util::Status st = processor_->Encode(text, &pieces);
  if (!st.ok()) throw DataError("subword model " + source_ + ": cannot encode the text (" + st.ToString() + ")");
  return pieces;
}

std::string SubwordModel::decode(const std::vector<std::string>& pieces) const {
  std::string text;
  const sentencepiece::util::Status st = processor_->Decode(pieces, &text);
  if (!st.ok()) throw DataError("subword model " + source_ + ": cannot decode the pieces (" + st.ToString() + ")");
  return text;
}

}  // namespace attn::data

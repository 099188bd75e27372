// Parallel text import: reading (plain or gzip), tokenising, vocabularies, encoding, writing
// (see parallel_text.hpp).
#include "attn/datasets/parallel_text.hpp"

#include <algorithm>

#include "attn/core/error.hpp"
#include "attn/data/batching.hpp"
#include "attn/datasets/gzip_file.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {
namespace {

// Length of the valid UTF-8 prefix of `s` (s.size() when all of it is valid): overlong forms,
// surrogates and code points above U+10FFFF are invalid (RFC 3629).
size_t valid_utf8_prefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
    const uint8_t c = b(0);
    size_t len;
    uint32_t cp, min;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1Fu; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0Fu; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07u; min = 0x10000; }
    else return i;
    if (i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((b(k) & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (b(k) & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return i;
}

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n\v\f";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::vector<int32_t> with_eos(std::vector<int32_t> ids) {
  ids.push_back(data::kEos);
  return ids;
}

}  // namespace

std::vector<std::string> read_text_lines(const std::string& path) {
  const std::string text = read_file_bytes(path, "text file");
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') continue;
    lines.push_back(text.substr(start, i - start));
    start = i + 1;
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string& line = lines[i];
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (const size_t nul = line.find('\0'); nul != std::string::npos)
      throw DataError(path + ": line " + std::to_string(i + 1) + " holds a NUL byte (at byte " + std::to_string(nul + 1) +
                      "); is it a text file?");
    const size_t ok = valid_utf8_prefix(line);
    if (ok != line.size())
      throw DataError(path + ": line " + std::to_string(i + 1) + " is not valid UTF-8 (at byte " +
                      std::to_string(ok + 1) + "); convert the file to UTF-8 first (e.g. with iconv)");
  }
  return lines;
}

TextPairs read_text_pairs(const std::string& src_path, const std::string& tgt_path) {
  TextPairs pairs{read_text_lines(src_path), read_text_lines(tgt_path)};
  if (pairs.src.size() != pairs.tgt.size())
    throw DataError("parallel text: '" + src_path + "' has " + std::to_string(pairs.src.size()) +
                    " lines but '" + tgt_path + "' has " + std::to_string(pairs.tgt.size()) +
                    "; line i of one must translate line i of the other");
  return pairs;
}

Splits<TextPairs> read_multi30k(const std::string& dir, const std::string& src_lang,
                                const std::string& tgt_lang) {
  if (src_lang == tgt_lang)
    throw ConfigError("multi30k: source and target language are both '" + src_lang + "'");
  const char* files[3] = {"train", "val", "test_2016_flickr"};
  Splits<TextPairs> out;
  for (int k = 0; k < 3; ++k) {
    const std::string stem = dir + "/" + files[k] + ".";
    out[k] = read_text_pairs(stem + src_lang + ".gz", stem + tgt_lang + ".gz");
  }
  return out;
}

ParallelData build_parallel(const Splits<TextPairs>& text, const ParallelConfig& cfg) {
  if (cfg.max_len < 0) throw ConfigError("parallel text: max_len must be >= 0 (0: no limit), got " +
                                         std::to_string(cfg.max_len));
  if (!cfg.src_subword != !cfg.tgt_subword)
    throw ConfigError("parallel text: a subword model for one side only (give both sides one, or neither)");
  // A side's tokens: a subword model's pieces, or the word tokeniser's.
  const auto split_side = [&](const std::string& line, const std::shared_ptr<const data::SubwordModel>& model) {
    if (!model) return data::tokenize(line, cfg.tokenize);
    return model->encode(cfg.tokenize.lowercase ? data::to_lower_utf8(line) : line);
  };
  // Tokenise every split, dropping pairs with an empty side (and over-long training pairs).
  struct Tokenised {
    std::vector<std::vector<std::string>> src, tgt;
    std::vector<std::string> src_text, tgt_text;
    int64_t lines = 0, dropped = 0;
  };
  Splits<Tokenised> tok;
  for (int k = 0; k < 3; ++k) {
    const TextPairs& t = text[k];
    if (t.src.size() != t.tgt.size())
      throw DataError(std::string("parallel text: split ") + kSplitNames[k] + " has " +
                      std::to_string(t.src.size()) + " source but " + std::to_string(t.tgt.size()) +
                      " target lines");
    Tokenised& out = tok[k];
    out.lines = static_cast<int64_t>(t.src.size());
    for (size_t i = 0; i < t.src.size(); ++i) {
      auto s = split_side(t.src[i], cfg.src_subword);
      auto g = split_side(t.tgt[i], cfg.tgt_subword);
      const bool too_long = k == 0 && cfg.max_len > 0 &&
                            std::max(s.size(), g.size()) > static_cast<size_t>(cfg.max_len);
      if (s.empty() || g.empty() || too_long) {
        ++out.dropped;
        continue;
      }
      out.src.push_back(std::move(s));
      out.tgt.push_back(std::move(g));
      out.src_text.push_back(trim(t.src[i]));
      out.tgt_text.push_back(trim(t.tgt[i]));
    }
  }
  if (tok.train.src.empty())
    throw DataError((cfg.one_text ? "text: the training split has no non-empty line"
                                  : "parallel text: the training split has no pair with both sides non-empty") +
                    std::string(cfg.max_len <= 0 ? ""
                                : cfg.one_text   ? " within max_len"
                                                 : " and within max_len"));

  data::TokenCounts src_counts, tgt_counts;
  for (size_t i = 0; i < tok.train.src.size(); ++i) {
    data::count_tokens(tok.train.src[i], src_counts);
    data::count_tokens(tok.train.tgt[i], tgt_counts);
  }
  ParallelData out;
  out.tokenize = cfg.tokenize;
  out.src_vocab = cfg.src_subword ? data::Vocab::from_subword(cfg.src_subword)
                  : cfg.vocab     ? *cfg.vocab
                                  : data::Vocab::build(src_counts, cfg.src_vocab);
  out.tgt_vocab = cfg.tgt_subword ? data::Vocab::from_subword(cfg.tgt_subword)
                  : cfg.vocab     ? *cfg.vocab
                                  : data::Vocab::build(tgt_counts, cfg.tgt_vocab);

  for (int k = 0; k < 3; ++k) {
    Tokenised& t = tok[k];
    std::vector<std::vector<int32_t>> src_ids, tgt_ids;
    src_ids.reserve(t.src.size());
    tgt_ids.reserve(t.tgt.size());
    for (size_t i = 0; i < t.src.size(); ++i) {
      src_ids.push_back(out.src_vocab.encode(t.src[i]));
      tgt_ids.push_back(with_eos(out.tgt_vocab.encode(t.tgt[i])));
    }
    const data::PaddedBatch src = data::pad_sequences(src_ids);
    const data::PaddedBatch tgt = data::pad_sequences(tgt_ids);
    ParallelSplit& split = out.splits[k];
    split.tokens = {kSplitNames[k], src.tokens, src.lengths, tgt.tokens, tgt.lengths, {}};
    split.src_text = std::move(t.src_text);
    split.tgt_text = std::move(t.tgt_text);
    split.lines = t.lines;
    split.dropped = t.dropped;
  }
  return out;
}

void write_parallel(io::File& file, const ParallelData& data) {
  Splits<TokenSplit> tokens;
  for (int k = 0; k < 3; ++k) tokens[k] = data.splits[k].tokens;
  write_splits(file, tokens);
  for (int k = 0; k < 3; ++k) {
    const std::string g = std::string("/") + kSplitNames[k];
    file.set_attr(g, "lines", data.splits[k].lines);
    file.set_attr(g, "dropped", data.splits[k].dropped);
    if (k == 0) continue;   // the training text is in the ids; references matter for evaluation
    file.write_strings(g + "/src_text", data.splits[k].src_text);
    file.write_strings(g + "/tgt_text", data.splits[k].tgt_text);
  }
  data::write_vocab(file, "/vocab/src", data.src_vocab);
  data::write_vocab(file, "/vocab/tgt", data.tgt_vocab);
  file.set_attr("/vocab", "tokenizer", data.src_vocab.subword() ? kSubwordTokenizerName : kTokenizerName);
  file.set_attr("/vocab", "lowercase", static_cast<int64_t>(data.tokenize.lowercase));
}

}  // namespace attn::datasets

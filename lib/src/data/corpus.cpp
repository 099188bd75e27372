// Hypothesis and reference corpora of translation files (corpus.hpp).
#include "attn/data/corpus.hpp"

#include "attn/core/error.hpp"
#include "attn/data/tokenizer.hpp"
#include "attn/data/vocab.hpp"

namespace attn::data {
namespace {

// Rows of an int32 [N, Lmax] id matrix decoded with `vocab`, each cut at lens[i] when given.
Corpus decode_rows(const io::File& file, const std::string& ids_name, const std::string& len_name,
                   const Vocab& vocab) {
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
      throw DataError(file.display_name() + ": dataset '" + ids_name + "' row " + std::to_string(i) + ": " +
                      e.what() + " (of /vocab/tgt)");
    }
  }
  return out;
}

}  // namespace

Corpus tokenise_lines(const std::vector<std::string>& lines, bool tokenize, bool lowercase) {
  Corpus out;
  out.reserve(lines.size());
  for (const std::string& line : lines)
    out.push_back(tokenize ? data::tokenize(line, {.lowercase = lowercase})
                           : split_whitespace(lowercase ? to_lower_utf8(line) : line));
  return out;
}

Corpus read_hypotheses(const io::File& file) {
  // Subword pieces: scored as the words of their detokenised text, as the references are.
  if (file.exists(std::string("/vocab/tgt") + kSubwordSuffix)) {
    if (file.exists("/predictions_detok")) return tokenise_lines(file.read_strings("/predictions_detok"), true, false);
    const Vocab vocab = read_vocab(file, "/vocab/tgt");
    std::vector<std::string> text;
    for (const std::vector<std::string>& pieces :
         decode_rows(file, "/predictions", file.exists("/predictions_len") ? "/predictions_len" : "", vocab))
      text.push_back(vocab.detokenize(pieces));
    return tokenise_lines(text, true, false);
  }
  if (file.exists("/predictions_text")) return tokenise_lines(file.read_strings("/predictions_text"), false, false);
  if (!file.exists("/predictions"))
    throw FormatError(file.display_name() + ": no dataset '/predictions' (int32 [N, L] ids with "
                      "/vocab/tgt) or '/predictions_text' (strings); write it with the model's "
                      "translate verb");
  return decode_rows(file, "/predictions", file.exists("/predictions_len") ? "/predictions_len" : "",
                     read_vocab(file, "/vocab/tgt"));
}

References read_references(const io::File& file, const std::string& split) {
  const std::string g = "/" + split;
  if (file.exists(g + "/tgt_text")) {
    const bool lowercase = file.has_attr("/vocab", "lowercase") && file.attr_int("/vocab", "lowercase") != 0;
    return {tokenise_lines(file.read_strings(g + "/tgt_text"), true, lowercase), false};
  }
  return {decode_rows(file, g + "/tgt", g + "/tgt_len", read_vocab(file, "/vocab/tgt")), true};
}

std::vector<int32_t> read_source_lengths(const io::File& file, const std::string& split) {
  const std::string name = "/" + split + "/src_len";
  if (!file.exists(name))
    throw FormatError(file.display_name() + ": no dataset '" + name + "' (int32 [N]): scoring by source "
                      "length needs a translation data set (datasets/README.md)");
  const Tensor lens = file.read(name, DType::i32, {kAny});
  return {lens.idata(), lens.idata() + lens.numel()};
}

}  // namespace attn::data

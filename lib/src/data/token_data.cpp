// Reading, checking and writing token splits (token_data.hpp).
#include "attn/data/token_data.hpp"

#include "attn/data/batching.hpp"
#include "attn/data/splits.hpp"
#include "attn/data/vocab.hpp"

#include "attn/core/error.hpp"

namespace attn::data {
namespace {

// Reads /<split>/<name> [N, S] (or [N, T]) and /<split>/<name>_len [N]; checks lengths and ids.
void read_sequences(const io::File& file, const std::string& split, const std::string& name, int64_t vocab,
                    Tensor& seqs, Tensor& lens) {
  const std::string ds = "/" + split + "/" + name, len_ds = ds + "_len";
  seqs = file.read(ds, DType::i32, {kAny, kAny});
  const int64_t n = seqs.dim(0), width = seqs.dim(1);
  lens = file.read(len_ds, DType::i32, {n});
  const std::string where = file.display_name() + ": dataset '";
  for (int64_t i = 0; i < n; ++i) {
    const int32_t len = lens.idata()[i];
    if (len < 1 || len > width)
      throw DataError(where + len_ds + "' row " + std::to_string(i) + " is " + std::to_string(len) +
                      ", expected a length in [1, " + std::to_string(width) + "] (the width of '" + ds + "')");
    const int32_t* row = seqs.idata() + i * width;
    for (int64_t t = 0; t < len; ++t)
      if (row[t] < 0 || (vocab > 0 && row[t] >= vocab))
        throw DataError(where + ds + "' row " + std::to_string(i) + " position " + std::to_string(t) +
                        " holds id " + std::to_string(row[t]) + ", outside the vocabulary [0, " +
                        std::to_string(vocab) + ")");
  }
}

// A labelled split read as language-model text: each row A | B as A [SEP] B EOS ([SEP] = EOS), the
// text a fine-tuned lm reads (models/transformer_classifier.hpp).
void labelled_as_text(const io::File& file, const std::string& split, int64_t vocab, Tensor& tgt, Tensor& tgt_len) {
  Tensor src, src_len;
  read_sequences(file, split, "src", vocab, src, src_len);
  const Tensor seg = file.read("/" + split + "/segments", DType::i32, src.shape());
  const int64_t N = src.dim(0), S = src.dim(1);
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) {
    auto& row = rows[static_cast<size_t>(i)];
    for (int64_t t = 0; t < src_len.idata()[i]; ++t) {
      if (t > 0 && seg.idata()[i * S + t] == 1 && seg.idata()[i * S + t - 1] == 0) row.push_back(kEos);
      row.push_back(src.idata()[i * S + t]);
    }
    row.push_back(kEos);
  }
  const PaddedBatch p = pad_sequences(rows);
  tgt = p.tokens;
  tgt_len = p.lengths;
}

}  // namespace

TokenSplit read_token_split(const io::File& file, const std::string& split, const TokenSplitRequest& request) {
  require_split(file, split);
  TokenSplit out;
  out.name = split;
  if (request.src) read_sequences(file, split, "src", request.src_vocab, out.src, out.src_len);
  const std::string g = "/" + split + "/";
  if (request.tgt && !file.exists(g + "tgt") && file.exists(g + "segments"))
    labelled_as_text(file, split, request.tgt_vocab, out.tgt, out.tgt_len);
  else if (request.tgt)
    read_sequences(file, split, "tgt", request.tgt_vocab, out.tgt, out.tgt_len);
  const std::string seg_ds = "/" + split + "/segments";
  if (request.src && request.segments && file.exists(seg_ds)) {
    out.segments = file.read(seg_ds, DType::i32, out.src.shape());
    const int64_t S = out.src.dim(1);
    for (int64_t i = 0; i < out.src.dim(0); ++i) {
      const int32_t* seg = out.segments.idata() + i * S;
      const int32_t len = out.src_len.idata()[i];
      for (int64_t t = 0; t < S; ++t)
        if (t < len ? !(seg[t] == 0 || seg[t] == 1) || (t > 0 && seg[t] < seg[t - 1]) || (t == 0 && seg[t] != 0)
                    : seg[t] != 0)
          throw DataError(file.display_name() + ": dataset '" + seg_ds + "' row " + std::to_string(i) + " position " +
                          std::to_string(t) + " holds " + std::to_string(seg[t]) +
                          "; expected 0 (sentence A) then 1 (sentence B) within src_len and 0 after it");
    }
  }
  if (request.src && request.tgt && out.src_len.numel() != out.tgt_len.numel())
    throw ShapeError(file.display_name() + ": '/" + split + "/src' has " + std::to_string(out.src_len.numel()) +
                     " rows but '/" + split + "/tgt' has " + std::to_string(out.tgt_len.numel()));
  return out;
}

void write_token_split(io::File& file, const std::string& split, const TokenSplit& s) {
  file.write_all("/" + split + "/", {{"src", s.src}, {"src_len", s.src_len}, {"tgt", s.tgt}, {"tgt_len", s.tgt_len}});
}

}  // namespace attn::data

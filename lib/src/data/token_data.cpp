// Reading, checking and writing token splits (token_data.hpp).
#include "attn/data/token_data.hpp"

#include "attn/data/splits.hpp"

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

}  // namespace

TokenSplit read_token_split(const io::File& file, const std::string& split, const TokenSplitRequest& request) {
  require_split(file, split);
  TokenSplit out;
  out.name = split;
  if (request.src) read_sequences(file, split, "src", request.src_vocab, out.src, out.src_len);
  if (request.tgt) read_sequences(file, split, "tgt", request.tgt_vocab, out.tgt, out.tgt_len);
  if (request.src && request.tgt && out.src_len.numel() != out.tgt_len.numel())
    throw ShapeError(file.display_name() + ": '/" + split + "/src' has " + std::to_string(out.src_len.numel()) +
                     " rows but '/" + split + "/tgt' has " + std::to_string(out.tgt_len.numel()));
  return out;
}

void write_token_split(io::File& file, const std::string& split, const TokenSplit& s) {
  file.write_all("/" + split + "/", {{"src", s.src}, {"src_len", s.src_len}, {"tgt", s.tgt}, {"tgt_len", s.tgt_len}});
}

}  // namespace attn::data

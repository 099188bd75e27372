// Reading, checking and writing token splits (token_data.hpp).
#include "attn/data/token_data.hpp"

#include "attn/core/error.hpp"
#include "attn/data/batching.hpp"
#include "attn/data/splits.hpp"
#include "attn/data/vocab.hpp"

namespace attn::data {
namespace {

// Reads rows `rows` of /<split>/<name> [N, S] (or [N, T]) and /<split>/<name>_len [N]; checks
// lengths and ids.
void read_sequences(const io::File& file, const std::string& split, const std::string& name, int64_t vocab,
                    const io::RowSet& rows, Tensor& seqs, Tensor& lens) {
  const std::string ds = "/" + split + "/" + name, len_ds = ds + "_len";
  seqs = file.read(ds, DType::i32, {kAny, kAny}, rows);
  check_split_rows(file, split, ds, file.shape(ds)[0]);
  const int64_t n = seqs.dim(0), width = seqs.dim(1);
  lens = file.read(len_ds, DType::i32, {file.shape(ds)[0]}, rows);
  const std::string where = file.display_name() + ": dataset '";
  for (int64_t i = 0; i < n; ++i) {
    const int32_t len = lens.idata()[i];
    const std::string row = std::to_string(rows.file_row(i));
    if (len < 1 || len > width)
      throw DataError(where + len_ds + "' row " + row + " is " + std::to_string(len) +
                      ", expected a length in [1, " + std::to_string(width) + "] (the width of '" + ds + "')");
    const int32_t* ids = seqs.idata() + i * width;
    for (int64_t t = 0; t < len; ++t)
      if (ids[t] < 0 || (vocab > 0 && ids[t] >= vocab))
        throw DataError(where + ds + "' row " + row + " position " + std::to_string(t) + " holds id " +
                        std::to_string(ids[t]) + ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
}

// A labelled split read as language-model text: each row A | B as A [SEP] B EOS ([SEP] = EOS), the
// text a fine-tuned lm reads (families/transformer/classifier.hpp).
void labelled_as_text(const io::File& file, const std::string& split, int64_t vocab, const io::RowSet& rows,
                      Tensor& tgt, Tensor& tgt_len) {
  Tensor src, src_len;
  read_sequences(file, split, "src", vocab, rows, src, src_len);
  const Tensor seg = file.read("/" + split + "/segments", DType::i32, file.shape("/" + split + "/src"), rows);
  const int64_t N = src.dim(0), S = src.dim(1);
  std::vector<std::vector<int32_t>> text(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) {
    auto& row = text[static_cast<size_t>(i)];
    for (int64_t t = 0; t < src_len.idata()[i]; ++t) {
      if (t > 0 && seg.idata()[i * S + t] == 1 && seg.idata()[i * S + t - 1] == 0) row.push_back(kEos);
      row.push_back(src.idata()[i * S + t]);
    }
    row.push_back(kEos);
  }
  const PaddedBatch p = pad_sequences(text);
  tgt = p.tokens;
  tgt_len = p.lengths;
}

// Whether the targets asked for are a labelled split's text (no /tgt, but segments).
bool targets_as_text(const io::File& file, const std::string& split, const TokenSplitRequest& request) {
  const std::string g = "/" + split + "/";
  return request.tgt && !file.exists(g + "tgt") && file.exists(g + "segments");
}

}  // namespace

TokenSplit read_token_split(const io::File& file, const std::string& split, const TokenSplitRequest& request,
                            const io::RowSet& rows) {
  require_split(file, split);
  TokenSplit out;
  out.name = split;
  Tensor src, tgt;
  if (request.src) read_sequences(file, split, "src", request.src_vocab, rows, src, out.src_len);
  if (targets_as_text(file, split, request))
    labelled_as_text(file, split, request.tgt_vocab, rows, tgt, out.tgt_len);
  else if (request.tgt)
    read_sequences(file, split, "tgt", request.tgt_vocab, rows, tgt, out.tgt_len);
  const std::string seg_ds = "/" + split + "/segments";
  if (request.src && request.segments && file.exists(seg_ds)) {
    const Tensor segments = file.read(seg_ds, DType::i32, file.shape("/" + split + "/src"), rows);
    const int64_t S = src.dim(1);
    for (int64_t i = 0; i < src.dim(0); ++i) {
      const int32_t* seg = segments.idata() + i * S;
      const int32_t len = out.src_len.idata()[i];
      for (int64_t t = 0; t < S; ++t)
        if (t < len ? !(seg[t] == 0 || seg[t] == 1) || (t > 0 && seg[t] < seg[t - 1]) || (t == 0 && seg[t] != 0)
                    : seg[t] != 0)
          throw DataError(file.display_name() + ": dataset '" + seg_ds + "' row " + std::to_string(rows.file_row(i)) +
                          " position " + std::to_string(t) + " holds " + std::to_string(seg[t]) +
                          "; expected 0 (sentence A) then 1 (sentence B) within src_len and 0 after it");
    }
    out.segments = segments;
  }
  if (request.src && request.tgt && out.src_len.numel() != out.tgt_len.numel())
    throw ShapeError(file.display_name() + ": '/" + split + "/src' has " + std::to_string(out.src_len.numel()) +
                     " rows but '/" + split + "/tgt' has " + std::to_string(out.tgt_len.numel()));
  out.src = src;
  out.tgt = tgt;
  return out;
}

TokenSplit open_token_split(const io::File& file, const std::string& split, const TokenSplitRequest& request,
                            KeepData keep, dist::Communicator& ranks) {
  const TokenSplit shapes = read_token_split(file, split, request, io::RowSet::range(0, 0));   // layout, no rows
  const std::string g = "/" + split + "/";
  const bool as_text = targets_as_text(file, split, request);
  const int64_t n = file.shape(g + (request.src || as_text || !request.tgt ? "src" : "tgt"))[0];
  const int64_t row_bytes = (shapes.src.dim(-1) + (as_text ? 0 : shapes.tgt.dim(-1)) + 2) * int64_t{4};
  if (!keep_in_file(keep, n * row_bytes, ranks)) return read_token_split(file, split, request);
  for_shared_blocks(n, row_bytes, ranks, [&](int64_t begin, int64_t end) {
    (void)read_token_split(file, split, request, io::RowSet::range(begin, end));
  });
  TokenSplit out;
  out.name = split;
  if (request.src) {
    out.src = Rows(file, g + "src", DType::i32);
    out.src_len = file.read(g + "src_len", DType::i32, {n});
    if (request.segments && file.exists(g + "segments")) out.segments = Rows(file, g + "segments", DType::i32);
  }
  if (as_text) {
    Tensor tgt;
    labelled_as_text(file, split, request.tgt_vocab, io::RowSet::all(), tgt, out.tgt_len);
    out.tgt = tgt;
  } else if (request.tgt) {
    out.tgt = Rows(file, g + "tgt", DType::i32);
    out.tgt_len = file.read(g + "tgt_len", DType::i32, {out.tgt.size()});
  }
  return out;
}

std::vector<bool> has_sentence_b(const Rows& segments, const Tensor& lengths, dist::Communicator& ranks) {
  const int64_t n = lengths.numel();
  std::vector<bool> out(static_cast<size_t>(n), false);
  if (segments.empty()) return out;
  const int64_t S = segments.dim(1);
  // In the file, each rank reads its share of the rows and the flags are gathered.
  const RowShare share = segments.in_file() ? share_rows(n, ranks) : RowShare{0, n, n};
  std::vector<std::byte> mine(static_cast<size_t>(share.end - share.begin));
  for_blocks(share.begin, share.end, S * 4, [&](int64_t begin, int64_t end) {
    const Tensor seg = segments.range(begin, end);
    for (int64_t i = begin; i < end; ++i)
      mine[static_cast<size_t>(i - share.begin)] =
          std::byte{seg.idata()[(i - begin) * S + lengths.idata()[i] - 1] == 1};
  });
  const std::vector<std::byte> all = segments.in_file() ? gather_shares(mine, share, n, 1, ranks) : mine;
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = all[static_cast<size_t>(i)] != std::byte{0};
  return out;
}

void write_token_split(io::File& file, const std::string& split, const TokenSplit& s) {
  file.write_all("/" + split + "/",
                 {{"src", s.src.all()}, {"src_len", s.src_len}, {"tgt", s.tgt.all()}, {"tgt_len", s.tgt_len}});
}

}  // namespace attn::data

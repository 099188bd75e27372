// Reading, checking and writing labelled splits (labelled_data.hpp).
#include "attn/families/transformer/labelled_data.hpp"

#include <algorithm>
#include <set>

#include "attn/core/error.hpp"
#include "attn/data/splits.hpp"
#include "attn/data/token_data.hpp"

namespace attn::transformer {
namespace {

std::string row_text(int64_t i) { return " row " + std::to_string(i); }

}  // namespace

bool LabelledSplit::has_pairs() const {
  const std::vector<bool> pair = data::has_sentence_b(segments, src_len);
  return std::find(pair.begin(), pair.end(), true) != pair.end();
}

LabelledSplit read_labelled_split(const io::File& file, const std::string& split, int64_t vocab_size,
                                  int64_t num_labels, const io::RowSet& rows) {
  data::require_split(file, split);
  const std::string g = "/" + split + "/", where = file.display_name() + ": dataset '";
  LabelledSplit out;
  out.name = split;
  const Tensor src = file.read(g + "src", DType::i32, {kAny, kAny}, rows);
  const Shape shape = file.shape(g + "src");
  data::check_split_rows(file, split, g + "src", shape[0]);
  const int64_t N = src.dim(0), L = src.dim(1);
  out.src_len = file.read(g + "src_len", DType::i32, {shape[0]}, rows);
  const Tensor segments = file.read(g + "segments", DType::i32, shape, rows);
  out.label = file.read(g + "label", DType::i32, {shape[0]}, rows);
  out.src = src;
  out.segments = segments;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t i = rows.file_row(n);
    const int32_t len = out.src_len.idata()[n];
    if (len < 1 || len > L)
      throw DataError(where + g + "src_len'" + row_text(i) + " is " + std::to_string(len) +
                      ", expected a length in [1, " + std::to_string(L) + "] (the width of '" + g + "src')");
    const int32_t* row = src.idata() + n * L;
    const int32_t* seg = segments.idata() + n * L;
    for (int64_t t = 0; t < L; ++t) {
      if (t < len && (row[t] < 0 || (vocab_size > 0 && row[t] >= vocab_size)))
        throw DataError(where + g + "src'" + row_text(i) + " position " + std::to_string(t) + " holds id " +
                        std::to_string(row[t]) + ", outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
      const bool ok = t < len ? (seg[t] == 0 || seg[t] == 1) && (t == 0 || seg[t] >= seg[t - 1]) : seg[t] == 0;
      if (!ok)
        throw DataError(where + g + "segments'" + row_text(i) + " position " + std::to_string(t) + " holds " +
                        std::to_string(seg[t]) + "; expected 0 (sentence A) then 1 (sentence B) within the row's " +
                        std::to_string(len) + " tokens and 0 after them");
    }
    if (seg[0] != 0)
      throw DataError(where + g + "segments'" + row_text(i) + " starts with segment 1; sentence A (0) comes first");
    const int32_t y = out.label.idata()[n];
    if (y < 0 || y >= num_labels)
      throw DataError(where + g + "label'" + row_text(i) + " is " + std::to_string(y) + ", outside the classes [0, " +
                      std::to_string(num_labels) + ") of '" + kLabelsDataset + "'");
  }
  return out;
}

LabelledSplit open_labelled_split(const io::File& file, const std::string& split, int64_t vocab_size,
                                  int64_t num_labels, data::KeepData keep, dist::Communicator& ranks) {
  const std::string g = "/" + split + "/";
  const LabelledSplit layout = read_labelled_split(file, split, vocab_size, num_labels, io::RowSet::range(0, 0));
  const int64_t n = file.shape(g + "src")[0], row_bytes = layout.src.dim(1) * 8 + 8;
  if (!data::keep_in_file(keep, n * row_bytes, ranks)) return read_labelled_split(file, split, vocab_size, num_labels);
  data::for_shared_blocks(n, row_bytes, ranks, [&](int64_t begin, int64_t end) {
    (void)read_labelled_split(file, split, vocab_size, num_labels, io::RowSet::range(begin, end));
  });
  LabelledSplit out;
  out.name = split;
  out.src = data::Rows(file, g + "src", DType::i32);
  out.src_len = file.read(g + "src_len", DType::i32, {n});
  out.segments = data::Rows(file, g + "segments", DType::i32);
  out.label = file.read(g + "label", DType::i32, {n});
  return out;
}

void write_labelled_split(io::File& file, const std::string& split, const LabelledSplit& s) {
  const std::string g = "/" + split + "/";
  file.write_all(g, {{"src", s.src.all()}, {"src_len", s.src_len}, {"label", s.label}});
  io::WriteOptions byte;
  byte.as_uint8 = true;
  file.write(g + "segments", s.segments.all(), byte);
}

std::vector<std::string> read_labels(const io::File& file) {
  std::vector<std::string> labels = file.read_strings(kLabelsDataset);
  const std::string where = file.display_name() + ": dataset '" + kLabelsDataset + "'";
  if (labels.size() < 2)
    throw FormatError(where + " holds " + std::to_string(labels.size()) + " class names, expected at least 2");
  std::set<std::string> seen;
  for (size_t k = 0; k < labels.size(); ++k) {
    if (labels[k].empty()) throw FormatError(where + " entry " + std::to_string(k) + " is empty");
    if (!seen.insert(labels[k]).second)
      throw FormatError(where + " entry " + std::to_string(k) + " ('" + labels[k] + "') repeats an earlier one");
  }
  return labels;
}

void write_labels(io::File& file, const std::vector<std::string>& labels) { file.write_strings(kLabelsDataset, labels); }

LabelledSplit gather_labelled(const LabelledSplit& s, std::span<const int64_t> index) {
  const int64_t B = static_cast<int64_t>(index.size()), L = s.src.dim(1);
  int64_t width = 1;
  for (int64_t i : index) width = std::max<int64_t>(width, s.src_len.idata()[i]);
  const Tensor src_rows = s.src.gather(index), segment_rows = s.segments.gather(index);
  LabelledSplit out;
  out.name = s.name;
  Tensor src({B, width}, DType::i32), segments({B, width}, DType::i32);
  out.src_len = Tensor({B}, DType::i32);
  out.label = Tensor({B}, DType::i32);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t i = index[static_cast<size_t>(b)];
    std::copy_n(src_rows.idata() + b * L, width, src.idata() + b * width);
    std::copy_n(segment_rows.idata() + b * L, width, segments.idata() + b * width);
    out.src_len.idata()[b] = s.src_len.idata()[i];
    out.label.idata()[b] = s.label.idata()[i];
  }
  out.src = src;
  out.segments = segments;
  return out;
}

}  // namespace attn::transformer

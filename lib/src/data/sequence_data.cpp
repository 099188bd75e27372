// The NTM tasks' sequence layout: gather, write, checked read (sequence_data.hpp).
#include "attn/data/sequence_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attn/core/error.hpp"
#include "attn/data/splits.hpp"

namespace attn::data {
namespace {

// Rows `index` of x [N, Tin, I] or [N, Tout, O], each cut to its first `rows` time steps.
Tensor gather_rows(const Rows& x, std::span<const int64_t> index, int64_t rows) {
  const Tensor all = x.gather(index);
  const int64_t T = x.dim(1), W = x.dim(2);
  Tensor y({static_cast<int64_t>(index.size()), rows, W});
  for (size_t b = 0; b < index.size(); ++b)
    std::memcpy(y.data() + static_cast<int64_t>(b) * rows * W, all.data() + static_cast<int64_t>(b) * T * W,
                static_cast<size_t>(rows * W) * sizeof(float));
  return y;
}

void check_lengths(const io::File& file, const std::string& dataset, const Tensor& len, int64_t max,
                   const io::RowSet& rows) {
  for (int64_t i = 0; i < len.numel(); ++i)
    if (len.idata()[i] < 1 || len.idata()[i] > max)
      throw DataError(file.display_name() + ": dataset '" + dataset + "' row " + std::to_string(rows.file_row(i)) +
                      " is " + std::to_string(len.idata()[i]) + ", expected a length in [1, " + std::to_string(max) +
                      "]");
}

void check_finite(const io::File& file, const std::string& dataset, const Tensor& x, const io::RowSet& rows) {
  const int64_t row = x.numel() / std::max<int64_t>(x.dim(0), 1);
  for (int64_t i = 0; i < x.numel(); ++i)
    if (!std::isfinite(x.data()[i]))
      throw DataError(file.display_name() + ": dataset '" + dataset + "' row " + std::to_string(rows.file_row(i / row)) +
                      " holds " + std::to_string(x.data()[i]) + "; every value must be finite");
}

// The targets are bits: the NTM's loss is the binary cross-entropy of each.
void check_bits(const io::File& file, const std::string& dataset, const Tensor& x, const io::RowSet& rows) {
  const int64_t row = x.numel() / std::max<int64_t>(x.dim(0), 1);
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.data()[i] != 0.0f && x.data()[i] != 1.0f)
      throw DataError(file.display_name() + ": dataset '" + dataset + "' row " +
                      std::to_string(rows.file_row(i / row)) + " holds " + std::to_string(x.data()[i]) +
                      "; a target must be a bit, 0 or 1");
}

}  // namespace

SequenceBatch SequenceSplit::gather(std::span<const int64_t> index) const {
  SequenceBatch out;
  out.input_len = Tensor({static_cast<int64_t>(index.size())}, DType::i32);
  out.target_len = Tensor({static_cast<int64_t>(index.size())}, DType::i32);
  int64_t tin = 1, tout = 1;
  for (size_t b = 0; b < index.size(); ++b) {
    out.input_len.idata()[b] = input_len.idata()[index[b]];
    out.target_len.idata()[b] = target_len.idata()[index[b]];
    tin = std::max<int64_t>(tin, out.input_len.idata()[b]);
    tout = std::max<int64_t>(tout, out.target_len.idata()[b]);
  }
  out.inputs = gather_rows(inputs, index, tin);
  out.targets = gather_rows(targets, index, tout);
  return out;
}

void write_sequence_split(io::File& file, const std::string& split, const SequenceSplit& s) {
  file.write_all("/" + split + "/", {{"inputs", s.inputs.all()}, {"input_len", s.input_len},
                                     {"targets", s.targets.all()}, {"target_len", s.target_len}});
}

SequenceSplit read_sequence_split(const io::File& file, const std::string& split, const io::RowSet& rows) {
  const std::string g = "/" + split + "/";
  require_split(file, split);
  SequenceSplit s;
  const Tensor inputs = file.read(g + "inputs", DType::f32, {kAny, kAny, kAny}, rows);
  const int64_t n = file.shape(g + "inputs")[0];
  check_split_rows(file, split, g + "inputs", n);
  s.input_len = file.read(g + "input_len", DType::i32, {n}, rows);
  const Tensor targets = file.read(g + "targets", DType::f32, {n, kAny, kAny}, rows);
  s.target_len = file.read(g + "target_len", DType::i32, {n}, rows);
  check_lengths(file, g + "input_len", s.input_len, inputs.dim(1), rows);
  check_lengths(file, g + "target_len", s.target_len, targets.dim(1), rows);
  check_finite(file, g + "inputs", inputs, rows);
  check_bits(file, g + "targets", targets, rows);
  s.inputs = inputs;
  s.targets = targets;
  return s;
}

SequenceSplit open_sequence_split(const io::File& file, const std::string& split, KeepData keep,
                                  dist::Communicator& ranks) {
  const SequenceSplit layout = read_sequence_split(file, split, io::RowSet::range(0, 0));
  const std::string g = "/" + split + "/";
  const int64_t n = file.shape(g + "inputs")[0];
  const int64_t row_bytes =
      (layout.inputs.dim(1) * layout.inputs.dim(2) + layout.targets.dim(1) * layout.targets.dim(2) + 2) * 4;
  if (!keep_in_file(keep, n * row_bytes, ranks)) return read_sequence_split(file, split);
  for_shared_blocks(n, row_bytes, ranks, [&](int64_t begin, int64_t end) {
    (void)read_sequence_split(file, split, io::RowSet::range(begin, end));
  });
  SequenceSplit s;
  s.inputs = Rows(file, g + "inputs", DType::f32);
  s.input_len = file.read(g + "input_len", DType::i32, {n});
  s.targets = Rows(file, g + "targets", DType::f32);
  s.target_len = file.read(g + "target_len", DType::i32, {n});
  return s;
}

}  // namespace attn::data

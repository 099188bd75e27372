// Per-example datasets held in memory or read from the file a batch at a time (rows.hpp).
#include "attn/data/rows.hpp"

#include <algorithm>
#include <cstring>

#include "attn/core/error.hpp"
#include "attn/core/memory.hpp"
#include "attn/dist/communicator.hpp"

namespace attn::data {

Rows::Rows(Tensor all) : memory_(std::move(all)), shape_(memory_.shape()), dtype_(memory_.dtype()) {}

Rows::Rows(const io::File& file, std::string dataset, DType dtype)
    : file_(&file), dataset_(std::move(dataset)), shape_(file.shape(dataset_)), dtype_(dtype) {
  if (shape_.empty())
    throw ShapeError(file.display_name() + ": dataset '" + dataset_ + "' is a scalar, expected one row per example");
}

int64_t Rows::dim(int axis) const {
  const int rank = static_cast<int>(shape_.size());
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw ShapeError("rows of shape " + to_string(shape_) + " have no axis " + std::to_string(axis));
  return shape_[static_cast<size_t>(a)];
}

Tensor Rows::gather(std::span<const int64_t> index) const {
  for (const int64_t i : index)
    if (i < 0 || i >= size())
      throw DataError("rows of shape " + to_string(shape_) + ": index " + std::to_string(i) + " is outside [0, " +
                      std::to_string(size()) + ")");
  if (file_) return file_->read(dataset_, dtype_, {}, io::RowSet::of(index));
  Shape shape = shape_;
  shape[0] = static_cast<int64_t>(index.size());
  Tensor out = Tensor::uninitialized(shape, dtype_);
  const size_t row_bytes = size() > 0 ? memory_.byte_size() / static_cast<size_t>(size()) : 0;
  if (out.empty()) return out;
  const auto* from = static_cast<const char*>(memory_.raw());
  auto* to = static_cast<char*>(out.raw());
  for (size_t r = 0; r < index.size(); ++r)
    std::memcpy(to + r * row_bytes, from + static_cast<size_t>(index[r]) * row_bytes, row_bytes);
  return out;
}

Tensor Rows::range(int64_t begin, int64_t end) const {
  return file_ ? file_->read_rows(dataset_, dtype_, begin, end) : memory_.rows(begin, end);
}

Tensor Rows::all() const { return file_ ? file_->read(dataset_, dtype_) : memory_; }

bool keep_in_file(KeepData keep, int64_t bytes, dist::Communicator& ranks) {
  switch (keep) {
    case KeepData::memory: return false;
    case KeepData::file: return true;
    case KeepData::automatic: {
      std::vector<double> file = {static_cast<size_t>(bytes) > memory_budget() / 16 ? 1.0 : 0.0};
      for (const double any : dist::allgather(ranks, std::span<const double>(file)))
        if (any > 0) return true;
      return false;
    }
  }
  return false;
}

const char* keep_data_name(KeepData keep) {
  switch (keep) {
    case KeepData::automatic: return "auto";
    case KeepData::memory: return "memory";
    case KeepData::file: return "file";
  }
  return "?";
}

KeepData parse_keep_data(const std::string& name) {
  for (const KeepData k : {KeepData::automatic, KeepData::memory, KeepData::file})
    if (name == keep_data_name(k)) return k;
  throw ConfigError("keep-data: '" + name + "' is not one of auto, memory, file");
}

void for_blocks(int64_t first, int64_t last, int64_t row_bytes, const std::function<void(int64_t, int64_t)>& f,
                int64_t bytes) {
  const int64_t step = std::max<int64_t>(1, bytes / std::max<int64_t>(row_bytes, 1));
  for (int64_t begin = first; begin < last; begin += step) f(begin, std::min(last, begin + step));
}

RowShare share_rows(int64_t n, const dist::Communicator& ranks) {
  const int64_t N = ranks.size(), q = (n + N - 1) / N;
  return {std::min(n, ranks.rank() * q), std::min(n, (ranks.rank() + 1) * q), q};
}

void for_shared_blocks(int64_t n, int64_t row_bytes, const dist::Communicator& ranks,
                       const std::function<void(int64_t, int64_t)>& f) {
  const RowShare share = share_rows(n, ranks);
  for_blocks(share.begin, share.end, row_bytes, f);
}

std::vector<std::byte> gather_shares(std::span<const std::byte> mine, const RowShare& share, int64_t n,
                                     size_t item_bytes, dist::Communicator& ranks) {
  if (mine.size() != static_cast<size_t>(share.end - share.begin) * item_bytes)
    throw Error("gather_shares: " + std::to_string(mine.size()) + " bytes for a share of " +
                std::to_string(share.end - share.begin) + " items of " + std::to_string(item_bytes));
  std::vector<std::byte> padded(static_cast<size_t>(share.per_rank) * item_bytes);   // allgather's equal blocks
  std::copy(mine.begin(), mine.end(), padded.begin());
  std::vector<std::byte> all = dist::allgather(ranks, padded);
  all.resize(static_cast<size_t>(n) * item_bytes);   // the padding of the last shares is at the end
  return all;
}

}  // namespace attn::data

// One per-example dataset of a split, [N, ...]: every row in memory, or left in its open data
// file and read when asked, a batch of rows at a time (io::File::read over an io::RowSet).
//
// A training run opens its splits (each family's open_*_split) and keeps their rows in memory or
// in the file (KeepData, the train verbs' --keep-data). In the file, its memory does not grow
// with the data set, and each rank of a data-parallel run reads only the rows of its shard of
// every batch; what batching needs (the lengths) stays in memory, and the rows were checked when
// the split was opened, one block at a time. The price is the reading: every batch inflates the
// compressed chunks its rows lie in (about 16 KiB each), a small share of a captioner's or a
// Transformer's step (bench/README.md, "HDF5: checksums, compression, chunk size and row reads"),
// which is why small data sets stay in memory (docs/ARCHITECTURE.md).
//
// Opening a split in the file is a pass the ranks of a data-parallel job share: each checks (and
// summarises) its share of the rows (share_rows), and what every rank needs of them (a flag per
// row) is gathered, so each row is read once by the job, not once per rank. Every rank must open
// the same splits in the same order (they do: the train verbs open them before anything else).
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/dist/world.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::data {

// Where a training run keeps its splits' rows.
enum class KeepData {
  automatic,   // in memory while they take at most memory_budget() / 16, else in the file
  memory,      // read whole into memory when the split is opened
  file,        // left in the file, read a batch at a time
};
// Whether rows of `bytes` are kept in the file. `automatic` asks every rank of `ranks` (the memory
// budget is each machine's own) and keeps them in the file when any rank would, so that the ranks
// open a split alike.
bool keep_in_file(KeepData keep, int64_t bytes, dist::Communicator& ranks = dist::world());
// "auto", "memory", "file": the option's values.
const char* keep_data_name(KeepData keep);
KeepData parse_keep_data(const std::string& name);   // ConfigError for another name

class Rows {
 public:
  Rows() = default;                     // no rows: empty() and shape [0]
  Rows(Tensor all);                     // NOLINT(google-explicit-constructor): in memory
  // Left in `file`, which must outlive the Rows (and every copy of it); dtype as File::read.
  Rows(const io::File& file, std::string dataset, DType dtype);

  bool in_file() const { return file_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int axis) const;          // negative counts from the end
  int64_t size() const { return shape_.empty() ? 0 : shape_[0]; }
  bool empty() const { return numel(shape_) == 0; }
  DType dtype() const { return dtype_; }

  // Rows `index`, in that order: [index.size(), ...]. DataError for a row outside [0, N).
  Tensor gather(std::span<const int64_t> index) const;
  // Rows [begin, end) (in memory: a view sharing storage).
  Tensor range(int64_t begin, int64_t end) const;
  // Every row (in memory: the tensor itself, sharing storage; in the file: read now), for what
  // needs the whole split (an output file that copies it).
  Tensor all() const;

 private:
  Tensor memory_;
  const io::File* file_ = nullptr;
  std::string dataset_;
  Shape shape_ = {0};
  DType dtype_ = DType::f32;
};

// Rows in blocks of about `bytes` (at least one row per block), for checking or summarising a split
// held in the file without holding it: calls f(begin, end) for consecutive [begin, end) over
// [first, last).
void for_blocks(int64_t first, int64_t last, int64_t row_bytes, const std::function<void(int64_t, int64_t)>& f,
                int64_t bytes = int64_t{64} << 20);

// This rank's share of a pass over n rows (or blocks): rank r of N takes [r q, (r + 1) q) cut to
// [0, n), q = ceil(n / N), so the last ranks may have fewer or none.
struct RowShare {
  int64_t begin = 0, end = 0;   // this rank's rows
  int64_t per_rank = 0;         // q: what gather_shares exchanges per rank
};
RowShare share_rows(int64_t n, const dist::Communicator& ranks);
// for_blocks over this rank's share of [0, n): the pass that checks a split opened in the file.
void for_shared_blocks(int64_t n, int64_t row_bytes, const dist::Communicator& ranks,
                       const std::function<void(int64_t, int64_t)>& f);

// Every rank's `mine` (its share's items of `item_bytes` each, in order), put together in row
// order on every rank: n items.
std::vector<std::byte> gather_shares(std::span<const std::byte> mine, const RowShare& share, int64_t n,
                                     size_t item_bytes, dist::Communicator& ranks);

}  // namespace attn::data

// Tensors in an attn::io::File: whole datasets read into a Tensor of the requested dtype (values
// out of its range throw instead of being clipped as HDF5 would), ranges of leading-dimension
// rows read as hyperslabs, and tensors written as new datasets: small ones inside their object
// header, larger ones chunked by whole rows with a checksum per chunk, and compressed (shuffle +
// deflate) when asked to or when they are large.
#include <algorithm>
#include <cstring>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/memory.hpp"
#include "hdf5_impl.hpp"

namespace attn::io {
using detail::H5Id;
using detail::holds;
using detail::normalize;
using detail::with_detail;

namespace {

constexpr int kDeflateLevel = 1;                    // after shuffle, ~the ratio of level 4 and faster (bench/README.md)
constexpr int64_t kChunkBytes = 16 << 10;           // target uncompressed chunk size (see checked_layout)
// Datasets up to this size are stored in their object header (HDF5's limit is 64 KiB, shared
// with the attributes).
constexpr int64_t kCompactBytes = 16 << 10;

hid_t mem_type(DType dtype) { return dtype == DType::f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT32; }


// A transfer property list whose conversion callback aborts on out-of-range values (an int64
// beyond int32, a float64 beyond float32) instead of HDF5's default silent clipping.
struct RangeGuard {
  bool overflowed = false;
  H5Id dxpl{H5Pcreate(H5P_DATASET_XFER), H5Pclose};
  RangeGuard(const RangeGuard&) = delete;   // the callback holds &overflowed
  RangeGuard& operator=(const RangeGuard&) = delete;
  RangeGuard() {
    H5Pset_type_conv_cb(
        dxpl.get(),
        [](H5T_conv_except_t except, hid_t, hid_t, void*, void*, void* data) -> H5T_conv_ret_t {
          if (except == H5T_CONV_EXCEPT_RANGE_HI || except == H5T_CONV_EXCEPT_RANGE_LOW) {
            *static_cast<bool*>(data) = true;
            return H5T_CONV_ABORT;
          }
          return H5T_CONV_UNHANDLED;   // NaN, infinities, precision: HDF5's usual handling
        },
        &overflowed);
  }
};

// Every row of a RowSet (`list`, its rows) inside the dataset of `shape`; ShapeError otherwise.
void check_rows(const std::string& label, const std::string& what, const Shape& shape, const RowSet& rows,
                const std::vector<int64_t>& list) {
  const int64_t n = shape.empty() ? -1 : shape[0];
  if (rows.kind() == RowSet::Kind::range) {
    const int64_t begin = rows.file_row(0), end = begin + rows.count(n);
    if (shape.empty() || begin < 0 || end < begin || end > n)
      throw ShapeError(label + ": rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " + what +
                       " are out of range for shape " + to_string(shape));
    return;
  }
  for (const int64_t r : list)
    if (shape.empty() || r < 0 || r >= n)
      throw ShapeError(label + ": row " + std::to_string(r) + " of " + what + " is out of range for shape " +
                       to_string(shape));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Layout: where a damaged byte is caught

H5Id File::Impl::checked_layout(const Shape& shape, int64_t elem_bytes, bool compress,
                                int64_t chunk_rows, const std::string& what) const {
  H5Id dcpl = detail::compact_creation(H5P_DATASET_CREATE);
  const int64_t n = numel(shape);
  if (n == 0) return dcpl;   // nothing stored: the shape is in the (checksummed) object header
  if (!compress && n * elem_bytes <= kCompactBytes) {
    // In the object header itself, under its checksum.
    H5Pset_layout(dcpl.get(), H5D_COMPACT);
    return dcpl;
  }
  // Chunks are whole rows of the leading dimension, so a row range touches few chunks; each
  // chunk carries a Fletcher-32 checksum, applied last so that it covers the bytes on disk. About
  // 16 KiB each (at least a row): a training batch reads scattered rows (data/rows.hpp) and
  // inflates every chunk it touches, so chunk size is what such a read costs; a whole dataset
  // reads a little slower than with 1 MiB chunks, and files grow a little (bench/README.md,
  // "HDF5: checksums, compression, chunk size and row reads").
  const int64_t row_bytes = n / shape[0] * elem_bytes;
  int64_t rows = chunk_rows > 0 ? chunk_rows : std::max<int64_t>(1, kChunkBytes / row_bytes);
  rows = std::min(rows, shape[0]);
  if (rows * row_bytes >= (int64_t{1} << 32))
    throw ShapeError(label + ": " + what + ": a chunk of " + std::to_string(rows) + " rows of shape " +
                     to_string(shape) + " exceeds HDF5's 4 GiB chunk limit");
  std::vector<hsize_t> chunk(shape.begin(), shape.end());
  chunk[0] = static_cast<hsize_t>(rows);
  H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
  if (compress) {
    if (!H5Zfilter_avail(H5Z_FILTER_DEFLATE))
      throw IoError(label + ": " + what + ": this HDF5 library has no deflate filter");
    H5Pset_shuffle(dcpl.get());
    H5Pset_deflate(dcpl.get(), kDeflateLevel);
  }
  H5Pset_fletcher32(dcpl.get());
  return dcpl;
}

// ---------------------------------------------------------------------------------------------
// Tensors

RowSet RowSet::range(int64_t begin, int64_t end) {
  RowSet r;
  r.kind_ = Kind::range;
  r.begin_ = begin;
  r.end_ = end;
  return r;
}

RowSet RowSet::of(std::span<const int64_t> rows) {
  RowSet r;
  r.kind_ = Kind::list;
  r.list_ = std::make_shared<const std::vector<int64_t>>(rows.begin(), rows.end());
  return r;
}

int64_t RowSet::count(int64_t n) const {
  switch (kind_) {
    case Kind::all: return n;
    case Kind::range: return end_ - begin_;
    case Kind::list: return static_cast<int64_t>(list_->size());
  }
  return 0;
}

int64_t RowSet::file_row(int64_t i) const {
  switch (kind_) {
    case Kind::all: return i;
    case Kind::range: return begin_ + i;
    case Kind::list: return (*list_)[static_cast<size_t>(i)];
  }
  return i;
}

std::vector<int64_t> RowSet::rows(int64_t n) const {
  if (kind_ == Kind::list) return *list_;
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(count(n), 0)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = file_row(static_cast<int64_t>(i));
  return out;
}

Tensor File::read(const std::string& dataset, DType dtype, const Shape& want) const {
  return read(dataset, dtype, want, RowSet::all());
}

Tensor File::read(const std::string& dataset, DType dtype, const Shape& want, const RowSet& rows) const {
  const Impl& m = impl();
  const hid_t ds = m.dataset(dataset);
  const std::string what = "dataset '" + normalize(dataset) + "'";
  H5Id type(H5Dget_type(ds), H5Tclose);
  m.check_class(type.get(), dtype, what);
  H5Id file_space(H5Dget_space(ds), H5Sclose);
  const Shape shape = m.space_shape(file_space.get(), what);
  if (!want.empty() && !shape_matches(shape, want))
    throw ShapeError(m.label + ": " + what + " has shape " + to_string(shape) + ", expected " +
                     to_string(want));
  const int64_t n = shape.empty() ? 0 : shape[0];
  // The rows read, ascending and distinct, as runs (first row, rows) of consecutive rows. A range
  // is one run; a list is sorted, and its own order (repeats included) restored after the read.
  std::vector<int64_t> list, sorted;
  std::vector<std::pair<int64_t, int64_t>> runs;
  if (rows.kind() == RowSet::Kind::range) {
    check_rows(m.label, what, shape, rows, {});
    if (rows.count(n) > 0) runs.emplace_back(rows.file_row(0), rows.count(n));
  } else if (rows.kind() == RowSet::Kind::list) {
    list = rows.rows(n);
    check_rows(m.label, what, shape, rows, list);
    sorted = list;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    for (const int64_t r : sorted)
      if (!runs.empty() && runs.back().first + runs.back().second == r) ++runs.back().second;
      else runs.emplace_back(r, 1);
  }
  Shape read_shape = shape;
  if (!rows.is_all()) {
    read_shape[0] = 0;
    for (const auto& run : runs) read_shape[0] += run.second;
  }

  const MemoryScope scope = MemoryScope::input(m.label + "'s " + what);
  Tensor got(read_shape, dtype);
  const size_t row_bytes = static_cast<size_t>(n > 0 ? numel(shape) / n : 0) * sizeof(float);
  // One H5Dread per run of consecutive rows: a selection of many blocks in one read costs HDF5
  // 1.10 several times more than the reads (bench/README.md, "HDF5: checksums, compression,
  // chunk size and row reads").
  auto read_part = [&](hid_t mem_sel, hid_t file_sel, char* into) {
    RangeGuard guard;
    if (H5Dread(ds, mem_type(dtype), mem_sel, file_sel, guard.dxpl.get(), into) >= 0) return;
    if (guard.overflowed) {
      H5Eclear2(H5E_DEFAULT);
      throw DataError(m.label + ": " + what + " holds " + holds(type.get()) + " outside the range of " +
                      dtype_name(dtype));
    }
    throw IoError(m.label + ": cannot read " + (rows.is_all() ? "" : "rows of ") + what + with_detail());
  };
  if (!got.empty() && rows.is_all()) read_part(H5S_ALL, H5S_ALL, static_cast<char*>(got.raw()));
  if (!got.empty() && !rows.is_all()) {
    char* into = static_cast<char*>(got.raw());
    std::vector<hsize_t> start(shape.size(), 0), count(shape.begin(), shape.end());
    for (const auto& [first, length] : runs) {
      start[0] = static_cast<hsize_t>(first);
      count[0] = static_cast<hsize_t>(length);
      H5Id mem_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
      if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0)
        throw IoError(m.label + ": cannot select rows of " + what + with_detail());
      read_part(mem_space.get(), file_space.get(), into);
      into += static_cast<size_t>(length) * row_bytes;
    }
  }
  if (list == sorted) return got;
  // Back into the list's order, repeats included.
  Shape out_shape = shape;
  out_shape[0] = static_cast<int64_t>(list.size());
  Tensor out(out_shape, dtype);
  const auto* from = static_cast<const char*>(got.raw());
  auto* to = static_cast<char*>(out.raw());
  for (size_t i = 0; i < list.size(); ++i) {
    const auto at = static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), list[i]) - sorted.begin());
    std::memcpy(to + i * row_bytes, from + at * row_bytes, row_bytes);
  }
  return out;
}

Tensor File::read(const std::string& dataset) const {
  H5Id type(H5Dget_type(impl().dataset(dataset)), H5Tclose);
  return read(dataset, H5Tget_class(type.get()) == H5T_INTEGER ? DType::i32 : DType::f32);
}

Tensor File::read_rows(const std::string& dataset, DType dtype, int64_t begin, int64_t end) const {
  return read(dataset, dtype, {}, RowSet::range(begin, end));
}

void File::write(const std::string& dataset, const Tensor& t, const WriteOptions& opts) {
  Impl& m = impl();
  const std::string path = normalize(dataset);
  const std::string what = "dataset '" + path + "'";
  H5Id lcpl = m.prepare_new_dataset(path);

  // What goes to disk, and from which buffer.
  hid_t file_type = t.dtype() == DType::f32 ? H5T_IEEE_F32LE : H5T_STD_I32LE;
  hid_t memory_type = mem_type(t.dtype());
  const void* buffer = t.raw();
  std::vector<uint8_t> bytes;
  if (opts.as_uint8) {
    if (t.dtype() != DType::i32)
      throw ShapeError(m.label + ": " + what + ": as_uint8 stores an int32 tensor, got " +
                       dtype_name(t.dtype()));
    const int32_t* v = t.idata();
    bytes.resize(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (v[i] < 0 || v[i] > 255)
        throw DataError(m.label + ": " + what + ": value " + std::to_string(v[i]) + " at index " +
                        std::to_string(i) + " does not fit uint8 (0..255)");
      bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(v[i]);
    }
    file_type = H5T_STD_U8LE;
    memory_type = H5T_NATIVE_UINT8;
    buffer = bytes.data();
  }
  const int64_t elem_bytes = opts.as_uint8 ? 1 : 4;

  const Shape& shape = t.shape();
  const std::vector<hsize_t> dims(shape.begin(), shape.end());
  H5Id space(shape.empty() ? H5Screate(H5S_SCALAR)
                           : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
             H5Sclose);
  H5Id dcpl = m.checked_layout(shape, elem_bytes, opts.compress || t.numel() * elem_bytes > kCompressBytes,
                               opts.chunk_rows, what);
  H5Id ds(H5Dcreate2(m.fid(), path.c_str(), file_type, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
          H5Dclose);
  if (!ds.valid()) throw IoError(m.label + ": cannot create " + what + with_detail());
  if (t.numel() > 0 && H5Dwrite(ds.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer) < 0)
    throw IoError(m.label + ": cannot write " + what + with_detail());
}

void File::write_all(const std::string& group, std::initializer_list<std::pair<const char*, const Tensor&>> tensors) {
  for (const auto& [name, t] : tensors) write(group + name, t);
}

}  // namespace attn::io

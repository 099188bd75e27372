// String datasets in an attn::io::File: one-dimensional arrays of strings, written as
// fixed-length, null-padded UTF-8 (checked first, so files stay readable by h5py and HDFView;
// fixed-length, so that every byte is under a checksum, hdf5_tensors.cpp) and read back from
// fixed-length strings of either padding or from variable-length ones (hdf5_vlen.cpp), checked
// to be UTF-8 too.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "hdf5_impl.hpp"

namespace attn::io {
using detail::H5Id;
using detail::holds;
using detail::normalize;
using detail::valid_utf8;
using detail::with_detail;

// ---------------------------------------------------------------------------------------------
// Strings

std::vector<std::string> File::read_strings(const std::string& dataset) const {
  const Impl& m = impl();
  const hid_t ds = m.dataset(dataset);
  const std::string what = "dataset '" + normalize(dataset) + "'";
  H5Id type(H5Dget_type(ds), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw FormatError(m.label + ": " + what + " holds " + holds(type.get()) + ", expected strings");
  H5Id space(H5Dget_space(ds), H5Sclose);
  const Shape shape = m.space_shape(space.get(), what);
  if (shape.size() != 1)
    throw ShapeError(m.label + ": " + what + " has shape " + to_string(shape) + ", expected [*]");
  const auto n = static_cast<size_t>(shape[0]);
  std::vector<std::string> out;
  if (n == 0) return out;
  if (H5Tis_variable_str(type.get()) > 0) {
    const int cset = H5Tget_cset(type.get());
    out = detail::read_vlen_isolated(m.label, what, n, [&](hid_t mem, char** ptrs) {
      H5Tset_cset(mem, static_cast<H5T_cset_t>(cset));
      return H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs) >= 0;
    });
  } else {
    const size_t size = H5Tget_size(type.get());
    std::vector<char> buf = detail::string_buffer(n, size, m.label, what);
    H5Id mem(H5Tcopy(type.get()), H5Tclose);
    if (H5Dread(ds, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0)
      throw IoError(m.label + ": cannot read " + what + with_detail());
    out = detail::split_fixed(buf, n, size, H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD);
  }
  // Checked here, on reading, so that a bad string (a vocabulary entry) is blamed on this file and
  // not on the output it would be copied into later (write_strings refuses it there).
  for (size_t i = 0; i < out.size(); ++i)
    if (!valid_utf8(out[i]))
      throw DataError(m.label + ": " + what + ": string " + std::to_string(i) +
                      " is not valid UTF-8 (or contains a NUL byte)");
  return out;
}

void File::write_strings(const std::string& dataset, const std::vector<std::string>& values) {
  Impl& m = impl();
  const std::string path = normalize(dataset);
  H5Id lcpl = m.prepare_new_dataset(path);
  size_t bytes = 1;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!valid_utf8(values[i]))
      throw DataError(m.label + ": dataset '" + path + "': string " + std::to_string(i) +
                      " is not valid UTF-8 (or contains a NUL byte)");
    bytes = std::max(bytes, values[i].size());
  }
  std::vector<char> buf(values.size() * bytes, '\0');
  for (size_t i = 0; i < values.size(); ++i) std::copy(values[i].begin(), values[i].end(), buf.begin() + i * bytes);
  H5Id type = detail::fixed_utf8_type(bytes);
  const hsize_t n = values.size();
  H5Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  H5Id dcpl = m.checked_layout({static_cast<int64_t>(n)}, static_cast<int64_t>(bytes), false, 0, "dataset '" + path + "'");
  H5Id ds(H5Dcreate2(m.fid(), path.c_str(), type.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
          H5Dclose);
  if (!ds.valid()) throw IoError(m.label + ": cannot create dataset '" + path + "'" + with_detail());
  if (n > 0 && H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0)
    throw IoError(m.label + ": cannot write dataset '" + path + "'" + with_detail());
}

}  // namespace attn::io

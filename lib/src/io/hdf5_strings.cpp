// String datasets in an attn::io::File: one-dimensional arrays of strings, written as
// variable-length UTF-8 (checked first, so files stay readable by h5py and HDFView) and read
// back from variable- or fixed-length strings of either padding (checked to be UTF-8 too).
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
using detail::vlen_utf8_type;
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
  out.reserve(n);
  if (n == 0) return out;
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Id mem = vlen_utf8_type();
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    std::vector<char*> ptrs(n, nullptr);
    if (H5Dread(ds, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
      throw IoError(m.label + ": cannot read " + what + with_detail());
    for (const char* p : ptrs) out.emplace_back(p ? p : "");
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
#else
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
#endif
  } else {
    const size_t size = H5Tget_size(type.get());
    std::vector<char> buf(n * size);
    H5Id mem(H5Tcopy(type.get()), H5Tclose);
    if (H5Dread(ds, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0)
      throw IoError(m.label + ": cannot read " + what + with_detail());
    const bool space_pad = H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD;
    for (size_t i = 0; i < n; ++i) {
      std::string s(buf.data() + i * size, size);
      s.resize(std::min(s.find('\0'), s.size()));
      if (space_pad) s.erase(s.find_last_not_of(' ') + 1);
      out.push_back(std::move(s));
    }
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
  std::vector<const char*> ptrs(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!valid_utf8(values[i]))
      throw DataError(m.label + ": dataset '" + path + "': string " + std::to_string(i) +
                      " is not valid UTF-8 (or contains a NUL byte)");
    ptrs[i] = values[i].c_str();
  }
  H5Id type = vlen_utf8_type();
  const hsize_t n = values.size();
  H5Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  H5Id ds(H5Dcreate2(m.fid(), path.c_str(), type.get(), space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
          H5Dclose);
  if (!ds.valid()) throw IoError(m.label + ": cannot create dataset '" + path + "'" + with_detail());
  if (n > 0 && H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
    throw IoError(m.label + ": cannot write dataset '" + path + "'" + with_detail());
}

}  // namespace attn::io

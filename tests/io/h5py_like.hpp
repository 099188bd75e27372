// Files as other writers make them (h5py's defaults: the earliest object formats, no checksums,
// variable-length strings in the global heap), written with the HDF5 C API for the tests of
// readers that must accept them. attnlab itself writes checksummed formats and fixed-length
// strings (lib/src/io).
#pragma once
#include <string>
#include <vector>

namespace attn::test {

// A file holding the string dataset `dataset` (variable-length UTF-8, bytes as given, valid or
// not) and the variable-length string attribute `key` = `value` on the root group.
void write_h5py_like_strings(const std::string& path, const std::string& dataset,
                             const std::vector<std::string>& values, const std::string& key,
                             const std::string& value);

// A file holding the int32 dataset `dataset` of shape [rows, cols], contiguous; its values
// (0, 1, 2, ...) written, or with `written` false never written, so that the file stores no
// bytes for it and HDF5 would read the fill value.
void write_h5py_like_ints(const std::string& path, const std::string& dataset, unsigned long long rows,
                          unsigned long long cols, bool written = true);

}  // namespace attn::test

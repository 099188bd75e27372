#include "h5py_like.hpp"

#include <hdf5.h>

#include <stdexcept>
#include <vector>

namespace attn::test {

void write_h5py_like_strings(const std::string& path, const std::string& dataset,
                             const std::vector<std::string>& values, const std::string& key,
                             const std::string& value) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  const hsize_t n = values.size();
  hid_t space = H5Screate_simple(1, &n, nullptr);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t ds = H5Dcreate2(file, dataset.c_str(), type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  const bool ok = ds >= 0 && H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) >= 0;
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(file, key.c_str(), type, scalar, H5P_DEFAULT, H5P_DEFAULT);
  const char* ptr = value.c_str();
  const bool attr_ok = attr >= 0 && H5Awrite(attr, type, &ptr) >= 0;
  H5Aclose(attr);
  H5Sclose(scalar);
  H5Dclose(ds);
  H5Pclose(lcpl);
  H5Sclose(space);
  H5Tclose(type);
  if (H5Fclose(file) < 0 || !ok || !attr_ok) throw std::runtime_error(path + ": cannot write the h5py-like file");
}

void write_h5py_like_ints(const std::string& path, const std::string& dataset, unsigned long long rows,
                          unsigned long long cols, bool written) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[2] = {rows, cols};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t ds = H5Dcreate2(file, dataset.c_str(), H5T_STD_I32LE, space, lcpl, dcpl, H5P_DEFAULT);
  std::vector<int> values(written ? rows * cols : 0);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int>(i);
  const bool ok = ds >= 0 && (!written || H5Dwrite(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
  H5Dclose(ds);
  H5Pclose(lcpl);
  H5Pclose(dcpl);
  H5Sclose(space);
  if (H5Fclose(file) < 0 || !ok) throw std::runtime_error(path + ": cannot write the h5py-like file");
}

}  // namespace attn::test

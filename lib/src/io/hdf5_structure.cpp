// Finding things in an attn::io::File: whether a path names a group or a dataset, what a group
// holds, the shape and type of a dataset, and the messages for a missing or mistaken object,
// which list what the nearest existing group does hold so that a typo is obvious. Datasets
// opened here stay open with a chunk cache for the tensor reads (hdf5_tensors.cpp).
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/memory.hpp"
#include "hdf5_impl.hpp"

namespace attn::io {
using detail::child_path;
using detail::H5Id;
using detail::holds;
using detail::join;
using detail::normalize;
using detail::type_name_of;
using detail::with_detail;

namespace {

constexpr size_t kChunkCacheBytes = 8u << 20;       // per open dataset: several chunks
constexpr size_t kChunkCacheSlots = 12421;          // a prime, as HDF5 recommends

const char* expected_class(DType dtype) {
  return dtype == DType::f32 ? "floats (float32)" : "integers (int32)";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Finding objects (File::Impl)

H5I_type_t File::Impl::kind(const std::string& path) const {
  const hid_t f = fid();
  if (path == "/") return H5I_GROUP;
  for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {   // every prefix link
    const std::string prefix = path.substr(0, at);
    const htri_t exists = H5Lexists(f, prefix.c_str(), H5P_DEFAULT);
    if (exists < 0) {   // the parent is a dataset, or a group whose links cannot be read
      const std::string error = with_detail();
      const std::string parent = prefix.substr(0, std::max<size_t>(prefix.rfind('/'), 1));
      H5Id p(H5Oopen(f, parent.c_str(), H5P_DEFAULT), H5Oclose);
      if (p.valid() && H5Iget_type(p.get()) == H5I_GROUP)
        throw IoError(label + ": cannot look up '" + prefix + "'" + error);
      H5Eclear2(H5E_DEFAULT);
      return H5I_BADID;
    }
    if (exists == 0) return H5I_BADID;
    if (at == std::string::npos) break;
  }
  H5Id obj(H5Oopen(f, path.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.valid()) {
    H5L_info_t link;
    if (H5Lget_info(f, path.c_str(), &link, H5P_DEFAULT) >= 0 && link.type == H5L_TYPE_HARD)
      throw IoError(label + ": cannot open '" + path + "'" + with_detail());   // a damaged object
    H5Eclear2(H5E_DEFAULT);   // a dangling soft or external link
    return H5I_BADID;
  }
  return H5Iget_type(obj.get());
}

std::vector<std::string> File::Impl::children(const std::string& group) const {
  H5Id g(H5Gopen2(fid(), group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) throw IoError(label + ": cannot open group '" + group + "'" + with_detail());
  H5G_info_t info;
  if (H5Gget_info(g.get(), &info) < 0)
    throw IoError(label + ": cannot read group '" + group + "'" + with_detail());
  std::vector<std::string> names;
  names.reserve(info.nlinks);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0,
                                         H5P_DEFAULT);
    if (n < 0) throw IoError(label + ": cannot list group '" + group + "'" + with_detail());
    std::string name(static_cast<size_t>(n), '\0');
    H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size() + 1,
                       H5P_DEFAULT);
    names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

void File::Impl::throw_missing(const std::string& what, const std::string& path) const {
  std::string group = "/", note;
  for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    const std::string prefix = path.substr(0, at);
    const H5I_type_t k = kind(prefix);
    if (k == H5I_GROUP) {
      group = prefix;
      continue;
    }
    note = k == H5I_BADID ? "no group '" + prefix + "'; " : "'" + prefix + "' is a dataset; ";
    break;
  }
  std::vector<std::string> found;
  for (const auto& name : children(group)) found.push_back(child_path(group, name));
  const std::string listing =
      found.empty() ? (group == "/" ? "the file is empty" : "group '" + group + "' is empty")
                    : "found: " + join(found);
  throw FormatError(label + ": no " + what + " '" + path + "' (" + note + listing + ")");
}

hid_t File::Impl::dataset(const std::string& name) const {
  const std::string path = normalize(name);
  if (auto it = datasets.find(path); it != datasets.end()) return it->second.get();
  const H5I_type_t k = kind(path);
  if (k == H5I_BADID) throw_missing("dataset", path);
  if (k != H5I_DATASET)
    throw FormatError(label + ": '" + path + "' is a group, expected a dataset (it holds: " +
                      join(children(path)) + ")");
  H5Id dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  // w0 0.75, HDF5's default. With 1.0 (evict fully read chunks first), HDF5 1.10.8 kept every chunk
  // that reads of scattered rows had touched, past kChunkCacheBytes, until nearly the whole data
  // set was resident (bench/README.md, "HDF5: checksums, compression, chunk size and row reads").
  H5Pset_chunk_cache(dapl.get(), kChunkCacheSlots, kChunkCacheBytes, /*w0=*/0.75);
  H5Id ds(H5Dopen2(fid(), path.c_str(), dapl.get()), H5Dclose);
  if (!ds.valid()) throw IoError(label + ": cannot open dataset '" + path + "'" + with_detail());
  check_extent(ds.get(), "dataset '" + path + "'");
  return datasets.emplace(path, std::move(ds)).first->second.get();
}

Shape File::Impl::space_shape(hid_t space, const std::string& what) const {
  if (H5Sget_simple_extent_type(space) == H5S_NULL)
    throw FormatError(label + ": " + what + " holds no data (null dataspace)");
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) throw IoError(label + ": cannot read the shape of " + what + with_detail());
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return Shape(dims.begin(), dims.end());
}

void File::Impl::check_extent(hid_t dataset, const std::string& what) const {
  H5Id space(H5Dget_space(dataset), H5Sclose);
  const Shape shape = space_shape(space.get(), what);
  std::vector<hsize_t> max(shape.size());
  H5Sget_simple_extent_dims(space.get(), nullptr, max.data());
  for (size_t i = 0; i < max.size(); ++i)
    if (max[i] != H5S_UNLIMITED && static_cast<hsize_t>(shape[i]) > max[i])
      throw DataError(label + ": " + what + " has shape " + to_string(shape) + ", past its maximum dimension " +
                      std::to_string(max[i]) + " (a damaged file)");
  // Deflate's best ratio is about 1032:1 (zlib's technical notes).
  constexpr double kMaxInflation = 1100.0;
  H5Id type(H5Dget_type(dataset), H5Tclose);
  H5Id dcpl(H5Dget_create_plist(dataset), H5Pclose);
  hsize_t file_bytes = 0;
  H5Fget_filesize(fid(), &file_bytes);
  double bytes = static_cast<double>(H5Tget_size(type.get()));
  for (const int64_t d : shape) bytes *= static_cast<double>(d);
  const double room = static_cast<double>(file_bytes) * (H5Pget_nfilters(dcpl.get()) > 0 ? kMaxInflation : 1.0);
  if (bytes > room)
    throw DataError(label + ": " + what + " has shape " + to_string(shape) + ", " + format_bytes(bytes) +
                    ", more than the file's " + format_bytes(static_cast<double>(file_bytes)) +
                    " can hold (a damaged file, or a dataset never written)");
}

void File::Impl::check_class(hid_t type, DType dtype, const std::string& what) const {
  const H5T_class_t cls = H5Tget_class(type);
  if (cls != (dtype == DType::f32 ? H5T_FLOAT : H5T_INTEGER))
    throw FormatError(label + ": " + what + " holds " + holds(type) + ", expected " +
                      expected_class(dtype));
}

void File::Impl::make_groups(const std::string& path) {
  if (kind(path) != H5I_BADID) return;   // a group, or a dataset carrying attributes
  // Each missing group made here, not by HDF5's intermediate-group creation, which would give
  // it the default (dense past 8 links) storage instead of compact_creation's.
  make_parent_groups(path);
  H5Id gcpl = detail::compact_creation(H5P_GROUP_CREATE);
  H5Id g(H5Gcreate2(fid(), path.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) throw IoError(label + ": cannot create group '" + path + "'" + with_detail());
}

void File::Impl::make_parent_groups(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) make_groups(path.substr(0, slash));
}

H5Id File::Impl::prepare_new_dataset(const std::string& path) {
  require_writable("dataset '" + path + "'");
  if (path == "/") throw Error(label + ": '/' is the root group, not a dataset name");
  if (kind(path) != H5I_BADID)
    throw IoError(label + ": dataset '" + path + "' already exists (a file's objects are "
                  "written once)");
  make_parent_groups(path);
  return H5Id(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
}

void File::Impl::collect_datasets(const std::string& group, const std::string& prefix,
                                  std::vector<std::string>& out) const {
  for (const auto& name : children(group)) {
    const std::string path = child_path(group, name);
    const std::string rel = prefix.empty() ? name : prefix + "/" + name;
    const H5I_type_t k = kind(path);
    if (k == H5I_DATASET) out.push_back(rel);
    else if (k == H5I_GROUP) collect_datasets(path, rel, out);
  }
}

// ---------------------------------------------------------------------------------------------
// Structure

bool File::exists(const std::string& name) const { return impl().kind(normalize(name)) != H5I_BADID; }
bool File::is_group(const std::string& name) const { return impl().kind(normalize(name)) == H5I_GROUP; }
bool File::is_dataset(const std::string& name) const {
  return impl().kind(normalize(name)) == H5I_DATASET;
}

std::vector<std::string> File::list(const std::string& group) const {
  const Impl& m = impl();
  const std::string path = normalize(group);
  const H5I_type_t k = m.kind(path);
  if (k == H5I_BADID) m.throw_missing("group", path);
  if (k != H5I_GROUP) throw FormatError(m.label + ": '" + path + "' is a dataset, expected a group");
  return m.children(path);
}

std::vector<std::string> File::list_datasets(const std::string& group) const {
  list(group);   // the same checks and messages
  std::vector<std::string> out;
  impl().collect_datasets(normalize(group), "", out);
  std::sort(out.begin(), out.end());
  return out;
}

Shape File::shape(const std::string& dataset) const {
  const Impl& m = impl();
  H5Id space(H5Dget_space(m.dataset(dataset)), H5Sclose);
  return m.space_shape(space.get(), "dataset '" + normalize(dataset) + "'");
}

std::string File::type_name(const std::string& dataset) const {
  H5Id type(H5Dget_type(impl().dataset(dataset)), H5Tclose);
  return type_name_of(type.get());
}

}  // namespace attn::io

// attn::io::File over the HDF5 C API: the one place in attnlab that includes hdf5.h.
//
// Each C handle lives in a non-copyable H5Id that closes it, so a throw never leaks one, and
// HDF5's automatic error printing is switched off on every thread that calls in: failures are
// read back from HDF5's error stack (its innermost message) and thrown as typed attn errors
// that name the file, the object, and what was expected and found. Output files are written
// to a temporary file beside the target (or built in memory for "-") and published by
// commit(); see hdf5_file.hpp for the contract.
#include "attn/io/hdf5_file.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <type_traits>
#include <utility>

namespace attn::io {
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------------
// Handles and errors

// An HDF5 id and the function that closes it. Non-copyable; movable.
class H5Id {
 public:
  using Close = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Close close) : id_(id), close_(close) {}
  H5Id(H5Id&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  H5Id& operator=(H5Id&& o) noexcept {
    if (this != &o) {
      close();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  ~H5Id() { close(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports whether closing succeeded (for files, closing is when data lands).
  bool close() {
    const herr_t status = valid() && close_ ? close_(id_) : 0;
    id_ = H5I_INVALID_HID;
    return status >= 0;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Close close_ = nullptr;
};

// Switches off HDF5's error printing for the calling thread (the error stack is per thread in
// the thread-safe build Debian ships). Called on entry to every public function.
void quiet_hdf5() {
  thread_local const bool done = [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

// The innermost message on HDF5's error stack (the most specific one), then clears the stack.
std::string hdf5_detail() {
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* err, void* data) -> herr_t {
        if (n == 0 && err->desc) *static_cast<std::string*>(data) = err->desc;
        return 0;
      },
      &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

// " (detail)" or "" when HDF5 gave none.
std::string with_detail() {
  const std::string d = hdf5_detail();
  return d.empty() ? std::string() : " (" + d + ")";
}

std::string errno_text(int err) { return std::strerror(err); }

// A comma-separated list, shortened after `limit` entries.
std::string join(const std::vector<std::string>& items, size_t limit = 12) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < limit; ++i) s += (i ? ", " : "") + items[i];
  if (items.size() > limit) s += ", ... (" + std::to_string(items.size() - limit) + " more)";
  return s;
}

// "/a/b" from "a/b", "/a//b/" and the like; "/" stays "/".
std::string normalize(const std::string& name) {
  std::string out = "/";
  for (char c : name) {
    if (c == '/' && out.back() == '/') continue;
    out += c;
  }
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string child_path(const std::string& group, const std::string& child) {
  return group == "/" ? "/" + child : group + "/" + child;
}

// Structural UTF-8 check (lead bytes C2..F4, each followed by its continuation bytes; no NUL,
// which would cut a C string short): enough to keep files decodable by h5py and HDFView.
bool valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned c = *p++;
    int more;
    if (c == 0) return false;
    if (c < 0x80) continue;
    if (c >= 0xC2 && c <= 0xDF) more = 1;
    else if (c >= 0xE0 && c <= 0xEF) more = 2;
    else if (c >= 0xF0 && c <= 0xF4) more = 3;
    else return false;
    if (end - p < more) return false;
    for (int i = 0; i < more; ++i)
      if ((p[i] & 0xC0) != 0x80) return false;
    p += more;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Types

std::string type_name_of(hid_t type) {
  const size_t bytes = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * bytes);
    case H5T_FLOAT: return "float" + std::to_string(8 * bytes);
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_OPAQUE: return "opaque";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "variable-length";
    case H5T_REFERENCE: return "reference";
    case H5T_BITFIELD: return "bitfield";
    case H5T_TIME: return "time";
    default: return "unknown";
  }
}

// "float32 values", "strings": what a dataset or attribute of `type` holds.
std::string holds(hid_t type) {
  const std::string name = type_name_of(type);
  return name == "string" ? "strings" : name + " values";
}

const char* expected_class(DType dtype) {
  return dtype == DType::f32 ? "floats (float32)" : "integers (int32)";
}

hid_t mem_type(DType dtype) { return dtype == DType::f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT32; }

void* buffer_of(Tensor& t) {
  return t.dtype() == DType::f32 ? static_cast<void*>(t.data()) : static_cast<void*>(t.idata());
}

// A variable-length UTF-8 string type, for writing strings and reading them back.
H5Id vlen_utf8_type() {
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

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

// ---------------------------------------------------------------------------------------------
// Standard streams. Each can carry one HDF5 image per process.

std::atomic<bool> g_stdin_used{false};
std::atomic<bool> g_stdout_claimed{false};
std::atomic<uint64_t> g_serial{0};   // temp-file and in-memory file names

// Everything readable from `fd` until end of file (a pipe, standard input).
std::vector<char> read_all(int fd, const std::string& label) {
  std::vector<char> bytes;
  size_t used = 0;
  for (;;) {
    if (bytes.size() - used < (1u << 16)) bytes.resize(std::max<size_t>(bytes.size() * 2, 1u << 20));
    const ssize_t n = ::read(fd, bytes.data() + used, bytes.size() - used);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(label + ": cannot read (" + errno_text(errno) + ")");
    }
    used += static_cast<size_t>(n);
  }
  bytes.resize(used);
  return bytes;
}

std::vector<char> read_all_stdin() {
  if (g_stdin_used.exchange(true))
    throw IoError("stdin: standard input was already read by this process; an HDF5 image can "
                  "be read from '-' only once per run");
  if (::isatty(STDIN_FILENO))
    throw IoError("stdin: standard input is a terminal; pipe an HDF5 file into '-' "
                  "(e.g. attn-data copy --out - | ...) or give a file name");
  return read_all(STDIN_FILENO, "stdin");
}

// True when the 8-byte HDF5 signature sits at offset 0, 512, 1024, 2048, ... (HDF5 spec,
// "Format Signature": after a user block of a power-of-two size >= 512).
bool has_hdf5_signature(const std::vector<char>& image) {
  static constexpr char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  for (size_t at = 0; at + 8 <= image.size(); at = at ? at * 2 : 512)
    if (std::memcmp(image.data() + at, kSignature, 8) == 0) return true;
  return false;
}

void write_all_stdout(const std::vector<char>& image) {
  std::fflush(stdout);   // whatever the process printed before goes first, in order
  size_t done = 0;
  while (done < image.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, image.data() + done, image.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError("stdout: cannot write the HDF5 image to standard output (" +
                    errno_text(errno) + ")");
    }
    done += static_cast<size_t>(n);
  }
}

// File access properties shared by every file: an error instead of a silently open file when
// objects are still open at close. The object format stays HDF5's default (the earliest that
// can hold the data, as h5py writes): readable by every HDF5 1.8+ tool, and the only one whose
// in-memory images HDF5 1.10's H5Fget_file_image returns intact (a version-2 superblock comes
// back with a stale checksum).
H5Id base_fapl() {
  H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_SEMI);
  // Lock like HDF5 always does, but work on filesystems without flock (NFS, Lustre).
  H5Pset_file_locking(fapl.get(), /*use_file_locking=*/true, /*ignore_when_disabled=*/true);
  return fapl;
}

// An in-memory file (core driver without backing store): for "-" in both directions.
H5Id memory_fapl() {
  H5Id fapl = base_fapl();
  H5Pset_fapl_core(fapl.get(), /*increment=*/size_t{1} << 20, /*backing_store=*/false);
  return fapl;
}

void fsync_path(const std::string& path, bool directory, const std::string& label) {
  const int fd = ::open(path.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (directory) return;   // best effort: some filesystems do not open folders
    throw IoError(label + ": cannot reopen '" + path + "' to sync it (" + errno_text(errno) + ")");
  }
  const int status = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (status != 0 && !(directory && (err == EINVAL || err == EROFS)))
    throw IoError(label + ": cannot sync '" + path + "' to disk (" + errno_text(err) + ")");
}

constexpr int kDeflateLevel = 1;   // after shuffle, ~the ratio of level 4 at 1.5x the speed
constexpr int64_t kChunkBytes = 1 << 20;            // target uncompressed chunk size
constexpr size_t kChunkCacheBytes = 8u << 20;       // per open dataset: several chunks
constexpr size_t kChunkCacheSlots = 12421;          // a prime, as HDF5 recommends

}  // namespace

// ---------------------------------------------------------------------------------------------
// File::Impl

struct File::Impl {
  std::string path;         // as given ("-" for stdio)
  std::string label;        // for messages: the path, or "stdin" / "stdout"
  std::string temp_path;    // the file HDF5 writes, until commit() renames it; "" otherwise
  bool writable = false;
  bool to_stdout = false;
  bool committed = false;
  H5Id file;
  // Datasets opened for reading stay open, so their chunk caches survive between read_rows.
  mutable std::map<std::string, H5Id> datasets;

  ~Impl() {
    datasets.clear();   // before the file: SEMI close degree refuses open objects
    file.close();
    if (!temp_path.empty() && !committed) ::unlink(temp_path.c_str());
    if (to_stdout && !committed) g_stdout_claimed = false;
  }

  hid_t fid() const {
    if (!file.valid())
      throw Error(label + ": the file was already committed and closed; it cannot be used");
    return file.get();
  }

  void require_writable(const std::string& what) const {
    if (!writable) throw Error(label + ": opened for reading; cannot write " + what);
    fid();
  }

  // Object kind of an existing path: H5I_GROUP, H5I_DATASET, or H5I_BADID when missing.
  H5I_type_t kind(const std::string& path) const {
    const hid_t f = fid();
    if (path == "/") return H5I_GROUP;
    for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {   // every prefix link
      const std::string prefix = path.substr(0, at);
      if (H5Lexists(f, prefix.c_str(), H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return H5I_BADID;
      }
      if (at == std::string::npos) break;
    }
    H5Id obj(H5Oopen(f, path.c_str(), H5P_DEFAULT), H5Oclose);
    if (!obj.valid()) {
      H5Eclear2(H5E_DEFAULT);   // a dangling soft or external link
      return H5I_BADID;
    }
    return H5Iget_type(obj.get());
  }

  std::vector<std::string> children(const std::string& group) const {
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

  // Throws FormatError for a missing `what` ("dataset", "group", "object") at `path`, listing
  // what the nearest existing group holds so that a typo is obvious.
  [[noreturn]] void throw_missing(const std::string& what, const std::string& path) const {
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

  // An open dataset (cached), or FormatError when `path` is missing or is not a dataset.
  hid_t dataset(const std::string& name) const {
    const std::string path = normalize(name);
    if (auto it = datasets.find(path); it != datasets.end()) return it->second.get();
    const H5I_type_t k = kind(path);
    if (k == H5I_BADID) throw_missing("dataset", path);
    if (k != H5I_DATASET)
      throw FormatError(label + ": '" + path + "' is a group, expected a dataset (it holds: " +
                        join(children(path)) + ")");
    H5Id dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
    H5Pset_chunk_cache(dapl.get(), kChunkCacheSlots, kChunkCacheBytes, /*w0=*/1.0);
    H5Id ds(H5Dopen2(fid(), path.c_str(), dapl.get()), H5Dclose);
    if (!ds.valid()) throw IoError(label + ": cannot open dataset '" + path + "'" + with_detail());
    return datasets.emplace(path, std::move(ds)).first->second.get();
  }

  // Dataspace dimensions; a scalar dataspace is shape [].
  Shape space_shape(hid_t space, const std::string& what) const {
    if (H5Sget_simple_extent_type(space) == H5S_NULL)
      throw FormatError(label + ": " + what + " holds no data (null dataspace)");
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 0) throw IoError(label + ": cannot read the shape of " + what + with_detail());
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    return Shape(dims.begin(), dims.end());
  }

  // Throws FormatError unless `type` belongs to the class that `dtype` reads.
  void check_class(hid_t type, DType dtype, const std::string& what) const {
    const H5T_class_t cls = H5Tget_class(type);
    if (cls != (dtype == DType::f32 ? H5T_FLOAT : H5T_INTEGER))
      throw FormatError(label + ": " + what + " holds " + holds(type) + ", expected " +
                        expected_class(dtype));
  }

  // Creates `path` and its missing parents as groups.
  void make_groups(const std::string& path) {
    if (kind(path) != H5I_BADID) return;   // a group, or a dataset carrying attributes
    H5Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    H5Id g(H5Gcreate2(fid(), path.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!g.valid()) throw IoError(label + ": cannot create group '" + path + "'" + with_detail());
  }

  // Checks that a new dataset can be created at `path`; returns the link creation list.
  H5Id prepare_new_dataset(const std::string& path) {
    require_writable("dataset '" + path + "'");
    if (path == "/") throw Error(label + ": '/' is the root group, not a dataset name");
    if (kind(path) != H5I_BADID)
      throw IoError(label + ": dataset '" + path + "' already exists (a file's objects are "
                    "written once)");
    H5Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    return lcpl;
  }

  // The attribute `key` of `object`, open; FormatError naming what exists when missing.
  H5Id open_attr(const std::string& object, const std::string& key) const {
    const std::string path = normalize(object);
    if (kind(path) == H5I_BADID) throw_missing("group or dataset", path);
    if (H5Aexists_by_name(fid(), path.c_str(), key.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      const auto names = attr_names(path);
      throw FormatError(label + ": no attribute '" + key + "' on '" + path + "' (" +
                        (names.empty() ? "it has no attributes" : "found: " + join(names)) + ")");
    }
    H5Id attr(H5Aopen_by_name(fid(), path.c_str(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.valid())
      throw IoError(label + ": cannot open attribute '" + key + "' of '" + path + "'" + with_detail());
    return attr;
  }

  std::vector<std::string> attr_names(const std::string& path) const {
    std::vector<std::string> names;
    H5Id obj(H5Oopen(fid(), path.c_str(), H5P_DEFAULT), H5Oclose);
    if (!obj.valid()) throw IoError(label + ": cannot open '" + path + "'" + with_detail());
    hsize_t idx = 0;
    const herr_t status = H5Aiterate2(
        obj.get(), H5_INDEX_NAME, H5_ITER_INC, &idx,
        [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
          static_cast<std::vector<std::string>*>(data)->push_back(name);
          return 0;
        },
        &names);
    if (status < 0) throw IoError(label + ": cannot list attributes of '" + path + "'" + with_detail());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string attr_what(const std::string& object, const std::string& key) const {
    return "attribute '" + key + "' of '" + normalize(object) + "'";
  }

  // Number of elements of an attribute (1 for a scalar); checked to be exactly 1 when `scalar`.
  hssize_t attr_count(hid_t attr, const std::string& what, bool scalar) const {
    H5Id space(H5Aget_space(attr), H5Sclose);
    const Shape shape = space_shape(space.get(), what);
    const int64_t n = numel(shape);
    if (scalar && n != 1)
      throw ShapeError(label + ": " + what + " has shape " + to_string(shape) + ", expected a scalar");
    return n;
  }

  // All elements of a string attribute (variable- or fixed-length).
  std::vector<std::string> read_attr_strings(hid_t attr, const std::string& what, bool scalar) const {
    H5Id type(H5Aget_type(attr), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING)
      throw FormatError(label + ": " + what + " holds " + holds(type.get()) + ", expected a string");
    const auto n = static_cast<size_t>(attr_count(attr, what, scalar));
    std::vector<std::string> out;
    if (H5Tis_variable_str(type.get()) > 0) {
      H5Id mem = vlen_utf8_type();
      H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
      std::vector<char*> ptrs(n, nullptr);
      if (H5Aread(attr, mem.get(), ptrs.data()) < 0)
        throw IoError(label + ": cannot read " + what + with_detail());
      for (char* p : ptrs) {
        out.emplace_back(p ? p : "");
        H5free_memory(p);
      }
    } else {
      const size_t size = H5Tget_size(type.get());
      std::vector<char> buf(n * size);
      H5Id mem(H5Tcopy(type.get()), H5Tclose);
      if (H5Aread(attr, mem.get(), buf.data()) < 0)
        throw IoError(label + ": cannot read " + what + with_detail());
      for (size_t i = 0; i < n; ++i) {
        std::string s(buf.data() + i * size, size);
        s.resize(std::min(s.find('\0'), s.size()));
        if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD) s.erase(s.find_last_not_of(' ') + 1);
        out.push_back(std::move(s));
      }
    }
    return out;
  }

  // All elements of a numeric attribute, read as T (int64_t, uint64_t or double) with a range
  // check: an integer attribute whose values do not fit T throws DataError.
  template <class T>
  std::vector<T> read_attr_numbers(hid_t attr, const std::string& what, bool scalar) const {
    H5Id type(H5Aget_type(attr), H5Tclose);
    const H5T_class_t cls = H5Tget_class(type.get());
    const bool want_real = std::is_floating_point_v<T>;
    if (cls != H5T_INTEGER && !(want_real && cls == H5T_FLOAT))
      throw FormatError(label + ": " + what + " holds " + holds(type.get()) + ", expected " +
                        (want_real ? "a number" : "an integer"));
    const auto n = static_cast<size_t>(attr_count(attr, what, scalar));
    std::vector<T> out(n);
    if constexpr (std::is_integral_v<T>) {
      // H5Aread clips silently, so read with the stored sign and range-check here.
      const bool is_signed = H5Tget_sign(type.get()) != H5T_SGN_NONE;
      std::vector<int64_t> s(is_signed ? n : 0);
      std::vector<uint64_t> u(is_signed ? 0 : n);
      const herr_t status = is_signed ? H5Aread(attr, H5T_NATIVE_INT64, s.data())
                                      : H5Aread(attr, H5T_NATIVE_UINT64, u.data());
      if (status < 0) throw IoError(label + ": cannot read " + what + with_detail());
      for (size_t i = 0; i < n; ++i) {
        const bool fits = is_signed ? (std::is_signed_v<T> || s[i] >= 0)
                                    : u[i] <= static_cast<uint64_t>(std::numeric_limits<T>::max());
        if (!fits)
          throw DataError(label + ": " + what + " is " +
                          (is_signed ? std::to_string(s[i]) : std::to_string(u[i])) +
                          ", which does not fit " + (std::is_signed_v<T> ? "int64" : "uint64"));
        out[i] = is_signed ? static_cast<T>(s[i]) : static_cast<T>(u[i]);
      }
      return out;
    }
    if (H5Aread(attr, H5T_NATIVE_DOUBLE, out.data()) < 0)
      throw IoError(label + ": cannot read " + what + with_detail());
    return out;
  }

  // Replaces attribute `key` of `object` (created as a group if missing) with `n` elements.
  void write_attr(const std::string& object, const std::string& key, hid_t file_type,
                  hid_t memory_type, const void* value) {
    const std::string path = normalize(object);
    require_writable("attribute '" + key + "' of '" + path + "'");
    if (key.empty()) throw Error(label + ": empty attribute name on '" + path + "'");
    make_groups(path);
    if (H5Aexists_by_name(fid(), path.c_str(), key.c_str(), H5P_DEFAULT) > 0 &&
        H5Adelete_by_name(fid(), path.c_str(), key.c_str(), H5P_DEFAULT) < 0)
      throw IoError(label + ": cannot replace attribute '" + key + "' of '" + path + "'" + with_detail());
    H5Id space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Id attr(H5Acreate_by_name(fid(), path.c_str(), key.c_str(), file_type, space.get(),
                                H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
    if (!attr.valid() || H5Awrite(attr.get(), memory_type, value) < 0)
      throw IoError(label + ": cannot write attribute '" + key + "' of '" + path + "'" + with_detail());
  }

  void collect_datasets(const std::string& group, const std::string& prefix,
                        std::vector<std::string>& out) const {
    for (const auto& name : children(group)) {
      const std::string path = child_path(group, name);
      const std::string rel = prefix.empty() ? name : prefix + "/" + name;
      const H5I_type_t k = kind(path);
      if (k == H5I_DATASET) out.push_back(rel);
      else if (k == H5I_GROUP) collect_datasets(path, rel, out);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Opening, committing

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File::Impl& File::impl() const {
  if (!impl_) throw Error("io::File: use of a moved-from File");
  quiet_hdf5();
  return *impl_;
}

const std::string& File::path() const { return impl().path; }
const std::string& File::display_name() const { return impl().label; }

namespace {

// Opens an HDF5 file image held in memory (read from stdin or a pipe) with the core driver.
H5Id open_image(std::vector<char>& image, const std::string& label, const std::string& source) {
  if (image.empty())
    throw FormatError(label + ": " + source + " is empty, expected an HDF5 file image (did the "
                      "command writing into the pipe fail?)");
  if (!has_hdf5_signature(image))
    throw FormatError(label + ": not an HDF5 file (no HDF5 signature in the " +
                      std::to_string(image.size()) + " bytes read from " + source + ")");
  H5Id fapl = memory_fapl();
  if (H5Pset_file_image(fapl.get(), image.data(), image.size()) < 0)   // HDF5 keeps a copy
    throw IoError(label + ": cannot load the HDF5 image" + with_detail());
  image = {};
  const std::string name = "attnlab-image-" + std::to_string(g_serial++);
  H5Id file(H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!file.valid()) throw FormatError(label + ": damaged or truncated HDF5 image" + with_detail());
  return file;
}

}  // namespace

File File::open_read(const std::string& path) {
  quiet_hdf5();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (path == "-") {
    impl->label = "stdin";
    std::vector<char> image = read_all_stdin();
    impl->file = open_image(image, impl->label, "standard input");
    return File(std::move(impl));
  }

  impl->label = path;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) throw IoError(path + ": cannot open: no such file");
  if (fs::is_directory(status)) throw IoError(path + ": cannot open: it is a folder, not a file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path + ": cannot open (" + errno_text(errno) + ")");
  if (!fs::is_regular_file(status)) {   // a pipe such as <(attn-data ... --out -)
    std::vector<char> image;
    try {
      image = read_all(fd, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    impl->file = open_image(image, impl->label, "the pipe");
    return File(std::move(impl));
  }
  ::close(fd);
  if (fs::file_size(path, ec) == 0) throw FormatError(path + ": not an HDF5 file (the file is empty)");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 == 0) throw FormatError(path + ": not an HDF5 file (no HDF5 signature found)");
  if (is_hdf5 < 0) throw IoError(path + ": cannot open" + with_detail());
  H5Id fapl = base_fapl();
  impl->file = H5Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!impl->file.valid())
    throw FormatError(path + ": damaged or truncated HDF5 file" + with_detail());
  return File(std::move(impl));
}

File File::create(const std::string& path) {
  quiet_hdf5();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->writable = true;
  if (path == "-") {
    impl->label = "stdout";
    if (g_stdout_claimed.exchange(true))
      throw IoError("stdout: standard output already carries an HDF5 file from this process; "
                    "only one output per run can be '-'");
    impl->to_stdout = true;   // from here on ~Impl releases the claim if we fail
    H5Id fapl = memory_fapl();
    const std::string name = "attnlab-stdout-" + std::to_string(g_serial++);
    impl->file = H5Id(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
    if (!impl->file.valid()) throw IoError("stdout: cannot create an in-memory HDF5 file" + with_detail());
    return File(std::move(impl));
  }

  impl->label = path;
  const fs::path target(path);
  const std::string name = target.filename().string();
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (name.empty() || name == "." || name == "..")
    throw IoError(path + ": cannot write: the path names a folder, expected a file name");
  if (fs::is_directory(target, ec)) throw IoError(path + ": cannot write: it is a folder");
  if (!fs::is_directory(dir, ec))
    throw IoError(path + ": cannot write: folder '" + dir.string() + "' does not exist");
  impl->temp_path = (dir / ("." + name + ".tmp." + std::to_string(::getpid()) + "." +
                            std::to_string(g_serial++)))
                        .string();
  H5Id fapl = base_fapl();
  impl->file = H5Id(H5Fcreate(impl->temp_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!impl->file.valid()) {
    const std::string detail = with_detail();
    impl->temp_path.clear();   // nothing was created, nothing to remove
    throw IoError(path + ": cannot create a file in folder '" + dir.string() + "'" + detail);
  }
  return File(std::move(impl));
}

void File::commit() {
  Impl& m = impl();
  if (!m.writable) throw Error(m.label + ": opened for reading; there is nothing to commit");
  if (m.committed) throw Error(m.label + ": already committed");
  m.fid();
  m.datasets.clear();
  if (m.to_stdout) {
    if (H5Fflush(m.file.get(), H5F_SCOPE_GLOBAL) < 0)
      throw IoError("stdout: cannot finish the in-memory HDF5 file" + with_detail());
    const ssize_t size = H5Fget_file_image(m.file.get(), nullptr, 0);
    std::vector<char> image(size > 0 ? static_cast<size_t>(size) : 0);
    if (size <= 0 || H5Fget_file_image(m.file.get(), image.data(), image.size()) != size)
      throw IoError("stdout: cannot take the HDF5 file image" + with_detail());
    if (!m.file.close()) throw IoError("stdout: cannot close the in-memory HDF5 file" + with_detail());
    m.committed = true;   // stdout is spent even if writing fails half-way
    write_all_stdout(image);
    return;
  }
  if (!m.file.close())
    throw IoError(m.label + ": cannot finish writing '" + m.temp_path + "'" + with_detail());
  fsync_path(m.temp_path, /*directory=*/false, m.label);
  if (std::rename(m.temp_path.c_str(), m.path.c_str()) != 0)
    throw IoError(m.label + ": cannot rename the finished temporary file '" + m.temp_path +
                  "' over it (" + errno_text(errno) + ")");
  m.committed = true;
  const fs::path target(m.path);
  fsync_path(target.has_parent_path() ? target.parent_path().string() : ".", /*directory=*/true,
             m.label);
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

// ---------------------------------------------------------------------------------------------
// Tensors

Tensor File::read(const std::string& dataset, DType dtype, const Shape& want) const {
  const Impl& m = impl();
  const hid_t ds = m.dataset(dataset);
  const std::string what = "dataset '" + normalize(dataset) + "'";
  H5Id type(H5Dget_type(ds), H5Tclose);
  m.check_class(type.get(), dtype, what);
  H5Id space(H5Dget_space(ds), H5Sclose);
  const Shape shape = m.space_shape(space.get(), what);
  if (!want.empty() && !shape_matches(shape, want))
    throw ShapeError(m.label + ": " + what + " has shape " + to_string(shape) + ", expected " +
                     to_string(want));
  Tensor out(shape, dtype);
  if (out.empty()) return out;
  RangeGuard guard;
  if (H5Dread(ds, mem_type(dtype), H5S_ALL, H5S_ALL, guard.dxpl.get(), buffer_of(out)) < 0) {
    if (guard.overflowed) {
      H5Eclear2(H5E_DEFAULT);
      throw DataError(m.label + ": " + what + " holds " + holds(type.get()) + " outside the range of " +
                      dtype_name(dtype));
    }
    throw IoError(m.label + ": cannot read " + what + with_detail());
  }
  return out;
}

Tensor File::read(const std::string& dataset) const {
  H5Id type(H5Dget_type(impl().dataset(dataset)), H5Tclose);
  return read(dataset, H5Tget_class(type.get()) == H5T_INTEGER ? DType::i32 : DType::f32);
}

Tensor File::read_rows(const std::string& dataset, DType dtype, int64_t begin, int64_t end) const {
  const Impl& m = impl();
  const hid_t ds = m.dataset(dataset);
  const std::string what = "dataset '" + normalize(dataset) + "'";
  H5Id type(H5Dget_type(ds), H5Tclose);
  m.check_class(type.get(), dtype, what);
  H5Id file_space(H5Dget_space(ds), H5Sclose);
  Shape shape = m.space_shape(file_space.get(), what);
  if (shape.empty() || begin < 0 || end < begin || end > shape[0])
    throw ShapeError(m.label + ": rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") of " + what + " are out of range for shape " + to_string(shape));
  shape[0] = end - begin;
  Tensor out(shape, dtype);
  if (out.empty()) return out;
  std::vector<hsize_t> start(shape.size(), 0), count(shape.begin(), shape.end());
  start[0] = static_cast<hsize_t>(begin);
  H5Id mem_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
  RangeGuard guard;
  if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                          nullptr) < 0 ||
      H5Dread(ds, mem_type(dtype), mem_space.get(), file_space.get(), guard.dxpl.get(),
              buffer_of(out)) < 0) {
    if (guard.overflowed) {
      H5Eclear2(H5E_DEFAULT);
      throw DataError(m.label + ": " + what + " holds " + holds(type.get()) + " outside the range of " +
                      dtype_name(dtype));
    }
    throw IoError(m.label + ": cannot read rows [" + std::to_string(begin) + ", " +
                  std::to_string(end) + ") of " + what + with_detail());
  }
  return out;
}

void File::write(const std::string& dataset, const Tensor& t, const WriteOptions& opts) {
  Impl& m = impl();
  const std::string path = normalize(dataset);
  const std::string what = "dataset '" + path + "'";
  H5Id lcpl = m.prepare_new_dataset(path);

  // What goes to disk, and from which buffer.
  hid_t file_type = t.dtype() == DType::f32 ? H5T_IEEE_F32LE : H5T_STD_I32LE;
  hid_t memory_type = mem_type(t.dtype());
  const void* buffer = t.dtype() == DType::f32 ? static_cast<const void*>(t.data())
                                               : static_cast<const void*>(t.idata());
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
  H5Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  const bool big = t.numel() * elem_bytes > kCompressBytes;
  if ((opts.compress || big) && !shape.empty() && t.numel() > 0) {
    // Chunks are whole rows of the leading dimension, so a row range touches few chunks.
    const int64_t row_bytes = t.numel() / shape[0] * elem_bytes;
    int64_t rows = opts.chunk_rows > 0 ? opts.chunk_rows : std::max<int64_t>(1, kChunkBytes / row_bytes);
    rows = std::min(rows, shape[0]);
    if (rows * row_bytes >= (int64_t{1} << 32))
      throw ShapeError(m.label + ": " + what + ": a chunk of " + std::to_string(rows) +
                       " rows of shape " + to_string(shape) + " exceeds HDF5's 4 GiB chunk limit");
    std::vector<hsize_t> chunk = dims;
    chunk[0] = static_cast<hsize_t>(rows);
    if (!H5Zfilter_avail(H5Z_FILTER_DEFLATE))
      throw IoError(m.label + ": " + what + ": this HDF5 library has no deflate filter");
    H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
    H5Pset_shuffle(dcpl.get());
    H5Pset_deflate(dcpl.get(), kDeflateLevel);
  }
  H5Id ds(H5Dcreate2(m.fid(), path.c_str(), file_type, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
          H5Dclose);
  if (!ds.valid()) throw IoError(m.label + ": cannot create " + what + with_detail());
  if (t.numel() > 0 && H5Dwrite(ds.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer) < 0)
    throw IoError(m.label + ": cannot write " + what + with_detail());
}

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

// ---------------------------------------------------------------------------------------------
// Attributes

bool File::has_attr(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  const std::string path = normalize(object);
  if (m.kind(path) == H5I_BADID) return false;
  const htri_t found = H5Aexists_by_name(m.fid(), path.c_str(), key.c_str(), H5P_DEFAULT);
  if (found < 0) H5Eclear2(H5E_DEFAULT);
  return found > 0;
}

std::vector<std::string> File::attr_names(const std::string& object) const {
  const Impl& m = impl();
  const std::string path = normalize(object);
  if (m.kind(path) == H5I_BADID) m.throw_missing("group or dataset", path);
  return m.attr_names(path);
}

std::string File::attr_string(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  return m.read_attr_strings(a.get(), m.attr_what(object, key), /*scalar=*/true).front();
}

int64_t File::attr_int(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  return m.read_attr_numbers<int64_t>(a.get(), m.attr_what(object, key), /*scalar=*/true).front();
}

uint64_t File::attr_uint(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  return m.read_attr_numbers<uint64_t>(a.get(), m.attr_what(object, key), /*scalar=*/true).front();
}

double File::attr_double(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  return m.read_attr_numbers<double>(a.get(), m.attr_what(object, key), /*scalar=*/true).front();
}

AttrValue File::attr(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  H5Id type(H5Aget_type(a.get()), H5Tclose);
  const std::string what = m.attr_what(object, key);
  switch (H5Tget_class(type.get())) {
    case H5T_STRING: return m.read_attr_strings(a.get(), what, true).front();
    case H5T_INTEGER: return m.read_attr_numbers<int64_t>(a.get(), what, true).front();
    case H5T_FLOAT: return m.read_attr_numbers<double>(a.get(), what, true).front();
    default:
      throw FormatError(m.label + ": " + what + " holds " + holds(type.get()) +
                        ", expected a string, an integer or a number");
  }
}

namespace {
std::string shortest(double v) {   // the shortest text that reads back as exactly v
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  return std::string(buf, res.ptr);
}
}  // namespace

std::string File::attr_text(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  H5Id type(H5Aget_type(a.get()), H5Tclose);
  const std::string what = m.attr_what(object, key);
  std::vector<std::string> items;
  switch (H5Tget_class(type.get())) {
    case H5T_STRING: items = m.read_attr_strings(a.get(), what, false); break;
    case H5T_INTEGER:
      if (H5Tget_sign(type.get()) == H5T_SGN_NONE)
        for (uint64_t v : m.read_attr_numbers<uint64_t>(a.get(), what, false)) items.push_back(std::to_string(v));
      else
        for (int64_t v : m.read_attr_numbers<int64_t>(a.get(), what, false)) items.push_back(std::to_string(v));
      break;
    case H5T_FLOAT:
      for (double v : m.read_attr_numbers<double>(a.get(), what, false)) items.push_back(shortest(v));
      break;
    default: return "<" + type_name_of(type.get()) + ">";
  }
  H5Id space(H5Aget_space(a.get()), H5Sclose);
  if (H5Sget_simple_extent_type(space.get()) == H5S_SCALAR && items.size() == 1) return items.front();
  return "[" + join(items, items.size()) + "]";
}

void File::set_attr(const std::string& object, const std::string& key, const std::string& value) {
  Impl& m = impl();
  if (!valid_utf8(value))
    throw DataError(m.label + ": " + m.attr_what(object, key) +
                    ": the value is not valid UTF-8 (or contains a NUL byte)");
  H5Id type = vlen_utf8_type();
  const char* ptr = value.c_str();
  m.write_attr(object, key, type.get(), type.get(), &ptr);
}

void File::set_attr(const std::string& object, const std::string& key, const char* value) {
  set_attr(object, key, std::string(value ? value : ""));
}

void File::set_attr(const std::string& object, const std::string& key, int value) {
  set_attr(object, key, static_cast<int64_t>(value));
}

void File::set_attr(const std::string& object, const std::string& key, int64_t value) {
  impl().write_attr(object, key, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void File::set_attr(const std::string& object, const std::string& key, uint64_t value) {
  impl().write_attr(object, key, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

void File::set_attr(const std::string& object, const std::string& key, double value) {
  impl().write_attr(object, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

void File::set_attr(const std::string& object, const std::string& key, const AttrValue& value) {
  std::visit([&](const auto& v) { set_attr(object, key, v); }, value);
}

// ---------------------------------------------------------------------------------------------
// Root attributes

void write_file_info(File& file, const FileInfo& info) {
  file.set_attr("/", "format", info.format);
  file.set_attr("/", "format_version", info.format_version);
  file.set_attr("/", "kind", info.kind);
  file.set_attr("/", "created_by", info.created_by);
  file.set_attr("/", "command", info.command);
}

FileInfo read_file_info(const File& file) {
  if (!file.has_attr("/", "format"))
    throw FormatError(file.display_name() + ": not an attnlab file (no root attribute 'format')");
  FileInfo info;
  info.format = file.attr_string("/", "format");
  if (file.has_attr("/", "format_version")) info.format_version = file.attr_int("/", "format_version");
  if (file.has_attr("/", "kind")) info.kind = file.attr_string("/", "kind");
  if (file.has_attr("/", "created_by")) info.created_by = file.attr_string("/", "created_by");
  if (file.has_attr("/", "command")) info.command = file.attr_string("/", "command");
  return info;
}

void require_format(const File& file, const std::string& format, const std::string& kind) {
  const std::string& label = file.display_name();
  if (!file.has_attr("/", "format"))
    throw FormatError(label + ": not an attnlab file (no root attribute 'format'), expected format '" +
                      format + "'");
  const FileInfo info = read_file_info(file);
  if (info.format != format)
    throw FormatError(label + ": format is '" + info.format + "', expected '" + format + "'");
  if (info.format_version > kFormatVersion)
    throw FormatError(label + ": format version " + std::to_string(info.format_version) +
                      " is newer than this build reads (" + std::to_string(kFormatVersion) +
                      "); update attnlab");
  if (!kind.empty() && info.kind != kind)
    throw FormatError(label + ": kind is '" + info.kind + "', expected '" + kind + "'");
}

}  // namespace attn::io

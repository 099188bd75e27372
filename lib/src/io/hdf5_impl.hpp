// attn::io::File over the HDF5 C API, internal to lib/src/io (not installed): what the
// hdf5_*.cpp files share. With them, the only code in attnlab that includes hdf5.h.
//
// Each C handle lives in a non-copyable H5Id that closes it, so a throw never leaks one, and
// HDF5's automatic error printing is switched off on every thread that calls in: failures are
// read back from HDF5's error stack (its innermost message) and thrown as typed attn errors
// that name the file, the object, and what was expected and found. File::Impl is the state of
// one open file; hdf5_file.hpp gives the contract. The files, one part each:
//   hdf5_common.cpp      error capture, object names, type names (the free functions below)
//   hdf5_open.cpp        open_read / create, stdin and stdout images, atomic commit
//   hdf5_structure.cpp   finding groups and datasets, shapes, listings
//   hdf5_tensors.cpp     tensors whole or by rows (hyperslabs), chunking and compression
//   hdf5_strings.cpp     string datasets
//   hdf5_vlen.cpp        variable-length strings, read in a child process
//   hdf5_checksum.cpp    the superblock checksum of in-memory images
//   hdf5_attributes.cpp  attributes, and the root attributes every attnlab file carries
#pragma once
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/io/output_file.hpp"

namespace attn::io {
namespace detail {

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

// ---- hdf5_common.cpp ------------------------------------------------------------------------

// Switches off HDF5's error printing for the calling thread (the error stack is per thread in
// the thread-safe build Debian ships). Called on entry to every public function.
void quiet_hdf5();

// " (detail)" with the innermost message on HDF5's error stack, or "" when HDF5 gave none.
// Clears the stack.
std::string with_detail();

// A comma-separated list, shortened after `limit` entries.
std::string join(const std::vector<std::string>& items, size_t limit = 12);

// "/a/b" from "a/b", "/a//b/" and the like; "/" stays "/".
std::string normalize(const std::string& name);

// "/g/child" for child "child" of group "/g" ("/child" in the root).
std::string child_path(const std::string& group, const std::string& child);

// Structural UTF-8 check (lead bytes C2..F4, each followed by its continuation bytes; no NUL,
// which would cut a C string short): enough to keep files decodable by h5py and HDFView.
bool valid_utf8(const std::string& s);

// "float32", "uint8", "string", ...: the name of an HDF5 type for messages.
std::string type_name_of(hid_t type);

// "float32 values", "strings": what a dataset or attribute of `type` holds.
std::string holds(hid_t type);

// A variable-length UTF-8 string type, to read such strings (h5py's default) with.
H5Id vlen_utf8_type();

// A fixed-length UTF-8 string type of `bytes` bytes, null-padded (numpy's 'S'), as attnlab
// writes every string: its bytes stay in checksummed storage, not in the global heap.
H5Id fixed_utf8_type(size_t bytes);

// A creation property list of `plist_class` (H5P_FILE_CREATE, H5P_GROUP_CREATE,
// H5P_DATASET_CREATE) that keeps links and attributes in the object header, under its checksum.
// HDF5's default moves a group's links, and an object's attributes, past 8 of them into "dense"
// storage: a fractal heap whose blocks carry no checksum, where tests/fuzz found a flipped byte
// of a /config or /params group crashing libhdf5 (a free of a wild pointer reading link names).
H5Id compact_creation(hid_t plist_class);

// The `n` strings of `bytes` bytes each in `buffer`, cut at the first NUL (and trailing spaces
// removed when `space_pad`).
std::vector<std::string> split_fixed(const std::vector<char>& buffer, size_t n, size_t bytes, bool space_pad);

// A buffer for `n` fixed-length strings of `bytes` bytes each, checked against the memory
// budget first (the sizes come from the file): MemoryError blaming the input otherwise.
std::vector<char> string_buffer(size_t n, size_t bytes, const std::string& label, const std::string& what);

// ---- hdf5_checksum.cpp ----------------------------------------------------------------------

// HDF5's metadata checksum (lookup3) of `size` bytes.
uint32_t metadata_checksum(const void* data, size_t size);
// Recomputes the checksum of a version-2+ superblock at the start of an in-memory file image,
// which HDF5 1.10's H5Fget_file_image leaves stale.
void refresh_superblock_checksum(std::vector<char>& image);

// ---- hdf5_vlen.cpp --------------------------------------------------------------------------

// The `n` variable-length strings that `read` reads (H5Dread or H5Aread into `ptrs`, with `mem`
// as the memory type), read in a child process: DataError naming `label` and `what` when the
// reader crashes, hangs or answers more than half the memory budget; IoError when HDF5 refuses.
std::vector<std::string> read_vlen_isolated(const std::string& label, const std::string& what, size_t n,
                                            const std::function<bool(hid_t mem, char** ptrs)>& read);

}  // namespace detail

// The state of one open File. Each group of members is defined in the file named above it.
struct File::Impl {
  using H5Id = detail::H5Id;

  std::string path;         // as given ("-" for stdio)
  std::string label;        // for messages: the path, or "stdin" / "stdout"
  std::unique_ptr<TempFile> temp;   // the file HDF5 writes, until commit() renames it over the target
  std::string device;       // a character device the image is streamed to on commit(); "" otherwise
  bool writable = false;
  bool to_stdout = false;   // the image goes to standard output on commit()
  bool committed = false;
  H5Id file;
  // Datasets opened for reading stay open, so their chunk caches survive between read_rows.
  mutable std::map<std::string, H5Id> datasets;

  // ---- hdf5_open.cpp ------------------------------------------------------------------------
  // Closes the file; removes an uncommitted temporary (TempFile) and releases an uncommitted stdout.
  ~Impl();

  hid_t fid() const {
    if (!file.valid())
      throw Error(label + ": the file was already committed and closed; it cannot be used");
    return file.get();
  }

  void require_writable(const std::string& what) const {
    if (!writable) throw Error(label + ": opened for reading; cannot write " + what);
    fid();
  }

  // ---- hdf5_structure.cpp -------------------------------------------------------------------
  // Object kind of an existing path: H5I_GROUP, H5I_DATASET, or H5I_BADID when missing.
  H5I_type_t kind(const std::string& path) const;
  // Names of the links in `group`, sorted.
  std::vector<std::string> children(const std::string& group) const;
  // Throws FormatError for a missing `what` ("dataset", "group", "object") at `path`, listing
  // what the nearest existing group holds so that a typo is obvious.
  [[noreturn]] void throw_missing(const std::string& what, const std::string& path) const;
  // An open dataset (cached; check_extent passed), or FormatError when `path` is missing or is
  // not a dataset.
  hid_t dataset(const std::string& name) const;
  // Dataspace dimensions; a scalar dataspace is shape [].
  Shape space_shape(hid_t space, const std::string& what) const;
  // Refuses (DataError) a dataset whose dimensions cannot be its stored ones: past its maximum
  // dimensions, or more bytes than the file could hold (inflated at deflate's best ratio when the
  // dataset has filters). A damaged dimension in a file without checksums (h5py's) would otherwise
  // ask for that much memory before HDF5's read fails. Run once, when dataset() opens it.
  void check_extent(hid_t dataset, const std::string& what) const;
  // Throws FormatError unless `type` belongs to the class that `dtype` reads.
  void check_class(hid_t type, DType dtype, const std::string& what) const;
  // Creates `path` and its missing parents as groups.
  void make_groups(const std::string& path);
  void make_parent_groups(const std::string& path);   // the groups above an object about to be made
  // Checks that a new dataset can be created at `path`; returns the link creation list.
  H5Id prepare_new_dataset(const std::string& path);
  // Appends the paths (relative to `prefix`) of every dataset below `group`.
  void collect_datasets(const std::string& group, const std::string& prefix,
                        std::vector<std::string>& out) const;

  // ---- hdf5_tensors.cpp ---------------------------------------------------------------------
  // The creation properties of a new dataset of `shape` (elements of `elem_bytes`) that keep
  // every stored byte under a checksum: small data in the object header, larger data in chunks
  // of `chunk_rows` leading rows (0: about 1 MiB) with a Fletcher-32 checksum each, after
  // shuffle + deflate when `compress`.
  H5Id checked_layout(const Shape& shape, int64_t elem_bytes, bool compress, int64_t chunk_rows,
                      const std::string& what) const;

  // ---- hdf5_attributes.cpp ------------------------------------------------------------------
  // The attribute `key` of `object`, open; FormatError naming what exists when missing.
  H5Id open_attr(const std::string& object, const std::string& key) const;
  std::vector<std::string> attr_names(const std::string& path) const;
  std::string attr_what(const std::string& object, const std::string& key) const;
  // Number of elements of an attribute (1 for a scalar); checked to be exactly 1 when `scalar`.
  hssize_t attr_count(hid_t attr, const std::string& what, bool scalar) const;
  // All elements of a string attribute (variable- or fixed-length).
  std::vector<std::string> read_attr_strings(hid_t attr, const std::string& what, bool scalar) const;
  // All elements of a numeric attribute, read as T (int64_t, uint64_t or double) with a range
  // check: an integer attribute whose values do not fit T throws DataError. Instantiated only
  // in hdf5_attributes.cpp.
  template <class T>
  std::vector<T> read_attr_numbers(hid_t attr, const std::string& what, bool scalar) const;
  // Replaces attribute `key` of `object` (created as a group if missing) with a scalar.
  void write_attr(const std::string& object, const std::string& key, hid_t file_type,
                  hid_t memory_type, const void* value);
};

}  // namespace attn::io

// HDF5 files: tensors, string arrays and attributes, with atomic writes and standard streams.
//
// The only code in attnlab that includes hdf5.h is lib/src/io/. Every failure throws IoError
// (cannot open/read/write), FormatError (content not as expected), ShapeError (wrong shape)
// or DataError (values that do not fit, invalid UTF-8), and the message names the file, the
// dataset path, and what was expected and found:
//   data.h5: dataset '/train/src' has shape [10, 7], expected [*, 8]
//   data.h5: no dataset '/train/x' (found: /train/src, /train/tgt)
// HDF5's own error printing is switched off; the library never prints.
//
// A path of "-" means standard input (open_read: an HDF5 file image is read from stdin) or
// standard output (create: the file is built in memory and its image written to stdout on
// commit()), so tools can be joined with `|`. Standard input can be read once per process.
// Writes never destroy anything (io/output_file.hpp): over a regular file or a new name, create()
// writes to a temporary file `.<name>.tmp.<pid>.<n>` in the same folder and commit() flushes,
// closes, fsyncs and renames it over the target (a symbolic link is followed, its target
// replaced); a character device (/dev/null) gets the file image streamed to it on commit(), like
// "-"; a FIFO, folder, socket or block device is refused with ConfigError. A File destroyed
// without commit() removes its temporary file, so a failed run never leaves a truncated output
// or damages an earlier file of the same name; SIGINT/SIGTERM remove it too (with
// remove_temp_files_on_signals), and one left by a killed process is removed by the next write
// of the same name.
//
// Damage is detected, not followed: files are written in HDF5 1.10's object formats, whose
// metadata all carry checksums, with small datasets inside their (checksummed) object headers
// and larger ones in chunks with a Fletcher-32 checksum each, and strings fixed-length (the
// global heap of variable-length strings has no checksum). A flipped bit in such a file is an
// IoError ("the file is damaged: ..."), never a crash or a silently different value.
//
// Dataset and object names are HDF5 paths; "train/src" and "/train/src" are the same. A File
// is used by one thread at a time (distinct Files may be used from distinct threads).
#pragma once
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn::io {

struct WriteOptions {
  bool compress = false;        // shuffle + deflate in the chunks; used automatically above kCompressBytes
  int64_t chunk_rows = 0;       // rows of the leading dimension per chunk (0: about 1 MiB per chunk)
  bool as_uint8 = false;        // store an int32 tensor as uint8 (values must fit 0..255)
};
inline constexpr int64_t kCompressBytes = 1 << 20;
// The attnlab layout version this build writes and the newest it reads (root `format_version`).
// 2: model files' /config attributes are named and valued as the tools' options (docs/FORMATS.md);
// data sets and outputs are as in 1, which is still read.
inline constexpr int64_t kFormatVersion = 2;

// The rows of a dataset's leading dimension that File::read takes: all of them, a range, or a
// list in any order (repeats allowed), for reading a batch of examples without the rest.
class RowSet {
 public:
  enum class Kind { all, range, list };
  static RowSet all() { return RowSet(); }
  static RowSet range(int64_t begin, int64_t end);
  static RowSet of(std::span<const int64_t> rows);
  Kind kind() const { return kind_; }
  bool is_all() const { return kind_ == Kind::all; }
  // How many rows are taken of a dataset of n rows (all: n).
  int64_t count(int64_t n) const;
  // The dataset's row number of the i-th row taken (for messages: "row 1234").
  int64_t file_row(int64_t i) const;
  // The rows as a list, of a dataset of n rows.
  std::vector<int64_t> rows(int64_t n) const;

 private:
  RowSet() = default;
  Kind kind_ = Kind::all;
  int64_t begin_ = 0, end_ = 0;                        // a range
  std::shared_ptr<const std::vector<int64_t>> list_;   // a list (shared: RowSets are copied)
};

// A scalar attribute value, for code that handles attributes generically (configurations).
using AttrValue = std::variant<std::string, int64_t, double>;

class File {
 public:
  static File open_read(const std::string& path);    // "-": HDF5 image from stdin (once)
  // An HDF5 file image held in memory, checked as "-" and pipes are; `label` names it in messages.
  static File open_image(std::vector<char> image, const std::string& label);
  static File create(const std::string& path);       // "-": image to stdout on commit()
  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  const std::string& path() const;                    // as given by the user ("-" for stdio)
  const std::string& display_name() const;            // for messages: the path, "stdin" or "stdout"
  void commit();                                      // finish an output file (see above)

  // Structure.
  bool exists(const std::string& name) const;         // dataset or group
  bool is_group(const std::string& name) const;       // false when missing
  bool is_dataset(const std::string& name) const;     // false when missing
  std::vector<std::string> list(const std::string& group) const;   // child names, sorted
  // Every dataset below `group`, recursively, as paths relative to it ("layer0/w_q"), sorted.
  std::vector<std::string> list_datasets(const std::string& group) const;
  Shape shape(const std::string& dataset) const;
  // The stored element type: "float32", "float64", "int32", "uint8", ..., "string", "compound".
  std::string type_name(const std::string& dataset) const;

  // Tensors. dtype f32 reads float datasets; i32 reads any integer dataset (uint8 included).
  // `want` (kAny wildcards) is checked when non-empty. Missing dataset, wrong dtype class or
  // shape throw with file, dataset, expected and found; values outside the range of `dtype`
  // (an int64 beyond int32) throw DataError instead of being clipped. One H5Dread per call.
  Tensor read(const std::string& dataset, DType dtype, const Shape& want = {}) const;
  // The natural dtype: f32 for float datasets, i32 for integer ones.
  Tensor read(const std::string& dataset) const;
  // The rows `rows` of the leading dimension only, in the order taken: [rows.count(N), ...]. One
  // H5Dread over a hyperslab per run of consecutive rows (a list is read in ascending order and
  // then put in its own); `want` is checked against the whole dataset. A row outside [0, N)
  // throws ShapeError. Open datasets keep a chunk cache, so reads of nearby rows one after
  // another decompress each chunk once: a data set larger than memory is read a batch at a time.
  Tensor read(const std::string& dataset, DType dtype, const Shape& want, const RowSet& rows) const;
  // Rows [begin, end): read(dataset, dtype, {}, RowSet::range(begin, end)).
  Tensor read_rows(const std::string& dataset, DType dtype, int64_t begin, int64_t end) const;
  // Creates intermediate groups. Overwrites nothing: writing an existing name throws.
  // One H5Dwrite per call; up to 16 KiB in the object header, larger in checksummed chunks
  // (about 1 MiB of whole rows, or opts.chunk_rows), compressed when opts.compress or above
  // kCompressBytes.
  void write(const std::string& dataset, const Tensor& t, const WriteOptions& opts = {});
  // Several tensors under one group: group + name for every (name, tensor).
  void write_all(const std::string& group, std::initializer_list<std::pair<const char*, const Tensor&>> tensors);

  // UTF-8 string arrays, e.g. vocabularies, written fixed-length (null-padded to the longest,
  // numpy's "S"), so that their bytes are under the file's checksums. Reading also accepts
  // variable-length strings (h5py's default), read in a child process because libhdf5 can crash
  // on a damaged global heap (DataError instead). Both directions refuse a
  // string that is not valid UTF-8 or holds a NUL byte (DataError naming the file, the dataset
  // and the string's index), as do attr_string and attr on reading and set_attr on writing.
  std::vector<std::string> read_strings(const std::string& dataset) const;
  void write_strings(const std::string& dataset, const std::vector<std::string>& values);

  // Scalar attributes of a group or dataset ("/" for the root). set_attr creates missing
  // groups and replaces an existing attribute of the same key. Strings are stored as
  // fixed-length UTF-8 (read back from either kind, as read_strings), integers as int64 (uint64 for the unsigned overload), reals as
  // float64. Readers accept any integer width for attr_int/attr_uint (range-checked) and
  // integers or floats for attr_double.
  bool has_attr(const std::string& object, const std::string& key) const;
  std::vector<std::string> attr_names(const std::string& object) const;   // sorted
  std::string attr_string(const std::string& object, const std::string& key) const;
  int64_t attr_int(const std::string& object, const std::string& key) const;
  uint64_t attr_uint(const std::string& object, const std::string& key) const;
  double attr_double(const std::string& object, const std::string& key) const;
  // The attribute as a string, int64 or double, by its stored type.
  AttrValue attr(const std::string& object, const std::string& key) const;
  // The attribute rendered as text whatever its type (for echoing configurations); arrays
  // render as "[1, 2, 3]", doubles in the shortest form that reads back exactly.
  std::string attr_text(const std::string& object, const std::string& key) const;
  void set_attr(const std::string& object, const std::string& key, const std::string& value);
  void set_attr(const std::string& object, const std::string& key, const char* value);
  void set_attr(const std::string& object, const std::string& key, int value);
  void set_attr(const std::string& object, const std::string& key, int64_t value);
  void set_attr(const std::string& object, const std::string& key, uint64_t value);
  void set_attr(const std::string& object, const std::string& key, double value);
  void set_attr(const std::string& object, const std::string& key, const AttrValue& value);

 private:
  struct Impl;
  explicit File(std::unique_ptr<Impl> impl);
  Impl& impl() const;
  std::unique_ptr<Impl> impl_;
};

// How long the child process that reads variable-length strings may take before it counts as
// hung (File::read_strings); for tests. 0 restores the default, 20 s and more for large datasets.
void set_string_reader_timeout(std::chrono::milliseconds timeout);

// Root attributes every attnlab file carries (DESIGN.md, "HDF5 conventions").
struct FileInfo {
  std::string format;           // "attnlab/dataset", "attnlab/model", "attnlab/output"
  int64_t format_version = kFormatVersion;
  std::string kind;             // "copy", "reverse", "transformer", ...
  std::string created_by;       // "attn-data 0.1.0"
  std::string command;          // the command line that made the file
};
void write_file_info(File& file, const FileInfo& info);
// Throws FormatError when the root has no `format` (not an attnlab file); the other fields
// are left at their defaults when absent.
FileInfo read_file_info(const File& file);
// Throws FormatError unless the root `format` is `format` (and `kind` when non-empty) and
// `format_version` is not newer than kFormatVersion.
void require_format(const File& file, const std::string& format, const std::string& kind = "");

// Opens a data set for reading. A file whose root says what it is must say `attnlab/dataset` of
// a version this build reads (FormatError naming the file, what it says and what was expected: a
// model file or a tool's output given as --data); a file without a root `format` (written by
// h5py or a filter script in the documented layout) is read as it is.
File open_dataset(const std::string& path);

// Copies the file `from` to `to` the way File writes: into a temporary file beside `to`, then
// synced and renamed over it, so that `to` is the old file or the whole copy, never a part (or
// streamed to "-" or a character device; resolve_output's refusals apply). IoError naming `to`
// otherwise.
void copy_file_atomically(const std::string& from, const std::string& to);

}  // namespace attn::io

// HDF5 files: tensors, string arrays and attributes, with atomic writes and standard streams.
//
// The only code in attnlab that includes hdf5.h is lib/src/io/. Every failure throws IoError
// (cannot open/read/write) or FormatError/ShapeError (content not as expected) whose message
// names the file, the dataset path, and what was expected and found.
//
// A path of "-" means standard input (open_read: an HDF5 file image is read from stdin) or
// standard output (create: the finished file image is written to stdout on commit()).
// Writes are atomic: create() writes to a temporary file in the same folder and commit()
// flushes, closes and renames it over the target. A File destroyed without commit() removes
// its temporary file, so a failed or killed run never leaves a truncated output or damages
// an earlier file of the same name.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn::io {

struct WriteOptions {
  bool compress = false;        // chunked + deflate; used automatically above kCompressBytes
  int64_t chunk_rows = 0;       // rows of the leading dimension per chunk (0: chosen)
  bool as_uint8 = false;        // store an int32 tensor as uint8 (values must fit 0..255)
};
inline constexpr int64_t kCompressBytes = 1 << 20;

class File {
 public:
  static File open_read(const std::string& path);    // "-": HDF5 image from stdin
  static File create(const std::string& path);       // "-": image to stdout on commit()
  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  const std::string& path() const;                    // as given by the user ("-" for stdio)
  void commit();                                      // finish an output file (see above)

  // Structure.
  bool exists(const std::string& name) const;         // dataset or group
  std::vector<std::string> list(const std::string& group) const;   // child names, sorted
  Shape shape(const std::string& dataset) const;

  // Tensors. dtype f32 reads float datasets; i32 reads any integer dataset (uint8 included).
  // `want` (kAny wildcards) is checked when non-empty. Missing dataset, wrong dtype class or
  // shape throw with file, dataset, expected and found.
  Tensor read(const std::string& dataset, DType dtype, const Shape& want = {}) const;
  // Rows [begin, end) of the leading dimension only (a hyperslab): for data larger than memory.
  Tensor read_rows(const std::string& dataset, DType dtype, int64_t begin, int64_t end) const;
  // Creates intermediate groups. Overwrites nothing: writing an existing name throws.
  void write(const std::string& dataset, const Tensor& t, const WriteOptions& opts = {});

  // UTF-8 string arrays (variable length), e.g. vocabularies.
  std::vector<std::string> read_strings(const std::string& dataset) const;
  void write_strings(const std::string& dataset, const std::vector<std::string>& values);

  // Attributes of a group or dataset ("/" for the root). Groups are created as needed.
  bool has_attr(const std::string& object, const std::string& key) const;
  std::vector<std::string> attr_names(const std::string& object) const;
  std::string attr_string(const std::string& object, const std::string& key) const;
  int64_t attr_int(const std::string& object, const std::string& key) const;
  double attr_double(const std::string& object, const std::string& key) const;
  // The attribute rendered as text whatever its type (for echoing configurations).
  std::string attr_text(const std::string& object, const std::string& key) const;
  void set_attr(const std::string& object, const std::string& key, const std::string& value);
  void set_attr(const std::string& object, const std::string& key, const char* value);
  void set_attr(const std::string& object, const std::string& key, int64_t value);
  void set_attr(const std::string& object, const std::string& key, double value);

 private:
  struct Impl;
  explicit File(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Root attributes every attnlab file carries (DESIGN.md, "HDF5 conventions").
struct FileInfo {
  std::string format;           // "attnlab/dataset", "attnlab/model", "attnlab/output"
  int64_t format_version = 1;
  std::string kind;             // "copy", "reverse", "transformer", ...
  std::string created_by;       // "attn-data 0.1.0"
  std::string command;          // the command line that made the file
};
void write_file_info(File& file, const FileInfo& info);
FileInfo read_file_info(const File& file);
// Throws FormatError unless the root `format` is `format` (and `kind` when non-empty).
void require_format(const File& file, const std::string& format, const std::string& kind = "");

}  // namespace attn::io

// Opening and creating attn::io::File: regular files, pipes, and "-" as an HDF5 image read from
// standard input or built in memory and written to standard output; and commit(), which
// publishes an output file: atomically over a regular file or a new name (io::TempFile), or
// streamed to a character device (output_file.hpp). Each standard stream carries at most one
// HDF5 image per process.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/core/memory.hpp"
#include "hdf5_impl.hpp"

namespace attn::io {
namespace fs = std::filesystem;
using detail::H5Id;
using detail::quiet_hdf5;
using detail::with_detail;

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// ---------------------------------------------------------------------------------------------
// Standard streams. Each can carry one HDF5 image per process.

std::atomic<bool> g_stdin_used{false};
std::atomic<bool> g_stdout_claimed{false};
std::atomic<uint64_t> g_serial{0};   // temp-file and in-memory file names

// Whether an HDF5 superblock signature sits where HDF5 looks for one: at 0, 512, 1024, 2048, ...
bool has_hdf5_signature(const std::vector<char>& bytes, size_t used) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  for (size_t at = 0; at + 8 <= used; at = at == 0 ? 512 : at * 2)
    if (std::equal(kSignature, kSignature + 8, bytes.begin() + static_cast<std::ptrdiff_t>(at))) return true;
  return false;
}

// Everything readable from `fd` until end of file (a pipe, standard input), checked as it comes:
// an HDF5 signature within the first MiB, and no more than half the memory budget in all, so
// that `--data - < /dev/zero` is refused at once instead of read for ever.
std::vector<char> read_all(int fd, const std::string& label) {
  constexpr size_t kSignatureWindow = size_t{1} << 20;
  std::vector<char> bytes;
  size_t used = 0;
  bool signed_off = false;
  for (;;) {
    if (!signed_off && used >= kSignatureWindow) {
      if (!has_hdf5_signature(bytes, used))
        throw FormatError(label + ": not an HDF5 file (no HDF5 signature in its first MiB)");
      signed_off = true;
    }
    if (used > memory_budget() / 2)
      throw DataError(label + ": more than " + format_bytes(static_cast<double>(used)) +
                      " arrived, half the memory budget; an HDF5 image read from a stream is held in memory");
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

// Writes a finished in-memory file's image to standard output or a character device.
void write_image(int fd, const std::vector<char>& image, const std::string& label) {
  size_t done = 0;
  while (done < image.size()) {
    const ssize_t n = ::write(fd, image.data() + done, image.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(label + ": cannot write the HDF5 image (" + errno_text(errno) + ")");
    }
    done += static_cast<size_t>(n);
  }
}

// File access properties shared by every file: an error instead of a silently open file when
// objects are still open at close.
H5Id base_fapl() {
  H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_SEMI);
  // Lock like HDF5 always does, but work on filesystems without flock (NFS, Lustre).
  H5Pset_file_locking(fapl.get(), /*use_file_locking=*/true, /*ignore_when_disabled=*/true);
  return fapl;
}

// The object formats of HDF5 1.10 for files attnlab writes: every piece of metadata (superblock,
// object headers with their attributes and small datasets, group indexes, chunk indexes) carries
// a checksum, so a damaged byte is an error on reading, not a crash or a silently different
// value. Readable by HDF5 1.10 and later (h5py, HDFView, h5dump of Debian 12).
void checksummed_formats(hid_t fapl) {
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110);
}

// An in-memory file (core driver without backing store): for "-" in both directions.
H5Id memory_fapl() {
  H5Id fapl = base_fapl();
  H5Pset_fapl_core(fapl.get(), /*increment=*/size_t{1} << 20, /*backing_store=*/false);
  return fapl;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Opening, committing

File::Impl::~Impl() {
  datasets.clear();   // before the file: SEMI close degree refuses open objects
  file.close();
  temp.reset();   // removes the temporary file unless it was published
  if (to_stdout && !committed) g_stdout_claimed = false;
}

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
H5Id open_hdf5_image(std::vector<char>& image, const std::string& label, const std::string& source) {
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

File File::open_image(std::vector<char> image, const std::string& label) {
  quiet_hdf5();
  auto impl = std::make_unique<Impl>();
  impl->path = impl->label = label;
  impl->file = open_hdf5_image(image, label, "memory");
  return File(std::move(impl));
}

File File::open_read(const std::string& path) {
  quiet_hdf5();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (path == "-") {
    impl->label = "stdin";
    std::vector<char> image = read_all_stdin();
    impl->file = open_hdf5_image(image, impl->label, "standard input");
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
    impl->file = open_hdf5_image(image, impl->label, "the pipe");
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
    checksummed_formats(fapl.get());
    const std::string name = "attnlab-stdout-" + std::to_string(g_serial++);
    impl->file = H5Id(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, detail::compact_creation(H5P_FILE_CREATE).get(), fapl.get()), H5Fclose);
    if (!impl->file.valid()) throw IoError("stdout: cannot create an in-memory HDF5 file" + with_detail());
    return File(std::move(impl));
  }

  impl->label = path;
  const OutputTarget out = resolve_output(path);
  if (out.mode == OutputMode::device) {   // /dev/null, a terminal: streamed to, never replaced
    impl->device = out.target;
    H5Id fapl = memory_fapl();
    checksummed_formats(fapl.get());
    const std::string name = "attnlab-device-" + std::to_string(g_serial++);
    impl->file = H5Id(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, detail::compact_creation(H5P_FILE_CREATE).get(), fapl.get()), H5Fclose);
    if (!impl->file.valid()) throw IoError(path + ": cannot create an in-memory HDF5 file" + with_detail());
    return File(std::move(impl));
  }
  impl->temp = std::make_unique<TempFile>(out.target);
  const fs::path dir = fs::path(impl->temp->path()).parent_path();
  H5Id fapl = base_fapl();
  checksummed_formats(fapl.get());
  impl->file = H5Id(H5Fcreate(impl->temp->path().c_str(), H5F_ACC_TRUNC, detail::compact_creation(H5P_FILE_CREATE).get(), fapl.get()), H5Fclose);
  if (!impl->file.valid())
    throw IoError(path + ": cannot create a file in folder '" + dir.string() + "'" + with_detail());
  return File(std::move(impl));
}

void File::commit() {
  Impl& m = impl();
  if (!m.writable) throw Error(m.label + ": opened for reading; there is nothing to commit");
  if (m.committed) throw Error(m.label + ": already committed");
  m.fid();
  m.datasets.clear();
  if (m.to_stdout || !m.device.empty()) {
    if (H5Fflush(m.file.get(), H5F_SCOPE_GLOBAL) < 0)
      throw IoError(m.label + ": cannot finish the in-memory HDF5 file" + with_detail());
    const ssize_t size = H5Fget_file_image(m.file.get(), nullptr, 0);
    std::vector<char> image(size > 0 ? static_cast<size_t>(size) : 0);
    if (size <= 0 || H5Fget_file_image(m.file.get(), image.data(), image.size()) != size)
      throw IoError(m.label + ": cannot take the HDF5 file image" + with_detail());
    detail::refresh_superblock_checksum(image);
    if (!m.file.close()) throw IoError(m.label + ": cannot close the in-memory HDF5 file" + with_detail());
    m.committed = true;   // the stream is spent even if writing fails half-way
    if (m.to_stdout) {
      std::fflush(stdout);   // whatever the process printed before goes first, in order
      write_image(STDOUT_FILENO, image, "stdout");
      return;
    }
    const int fd = ::open(m.device.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(m.label + ": cannot open the device to write (" + errno_text(errno) + ")");
    try {
      write_image(fd, image, m.label);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return;
  }
  if (!m.file.close())
    throw IoError(m.label + ": cannot finish writing '" + m.temp->path() + "'" + with_detail());
  m.temp->publish(m.label);
  m.committed = true;
}

void copy_file_atomically(const std::string& from, const std::string& to) {
  const OutputTarget out = resolve_output(to);
  if (out.mode != OutputMode::replace) {   // standard output or a device: streamed
    const int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(from + ": cannot open (" + errno_text(errno) + ")");
    std::vector<char> bytes;
    try {
      bytes = read_all(fd, from);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    write_bytes(to, std::string_view(bytes.data(), bytes.size()));
    return;
  }
  TempFile temp(out.target);
  std::error_code ec;
  fs::copy_file(from, temp.path(), fs::copy_options::overwrite_existing, ec);
  if (ec) throw IoError(to + ": cannot copy '" + from + "' there (" + ec.message() + ")");
  temp.publish(to);
}

}  // namespace attn::io

// Opening and creating attn::io::File: regular files, pipes, and "-" as an HDF5 image read from
// standard input or built in memory and written to standard output; and commit(), which
// publishes an output file atomically (a temporary file beside the target, fsynced and renamed
// over it). Each standard stream carries at most one HDF5 image per process.
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
#include <utility>
#include <vector>

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

// The hidden temporary file an output to `path` is written to first, in the target's folder
// (checked: a file name in a folder that exists).
std::string temp_path_for(const std::string& path) {
  const fs::path target(path);
  const std::string name = target.filename().string();
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (name.empty() || name == "." || name == "..")
    throw IoError(path + ": cannot write: the path names a folder, expected a file name");
  if (fs::is_directory(target, ec)) throw IoError(path + ": cannot write: it is a folder");
  if (!fs::is_directory(dir, ec))
    throw IoError(path + ": cannot write: folder '" + dir.string() + "' does not exist");
  return (dir / ("." + name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(g_serial++))).string();
}

// Syncs the finished temporary file, renames it over `path` and syncs the folder.
void publish(const std::string& temp, const std::string& path, const std::string& label) {
  fsync_path(temp, /*directory=*/false, label);
  if (std::rename(temp.c_str(), path.c_str()) != 0)
    throw IoError(label + ": cannot rename the finished temporary file '" + temp + "' over it (" +
                  errno_text(errno) + ")");
  const fs::path target(path);
  fsync_path(target.has_parent_path() ? target.parent_path().string() : ".", /*directory=*/true, label);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Opening, committing

File::Impl::~Impl() {
  datasets.clear();   // before the file: SEMI close degree refuses open objects
  file.close();
  if (!temp_path.empty() && !committed) ::unlink(temp_path.c_str());
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
  impl->temp_path = temp_path_for(path);
  const fs::path dir = fs::path(impl->temp_path).parent_path();
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
  publish(m.temp_path, m.path, m.label);
  m.committed = true;
}

void copy_file_atomically(const std::string& from, const std::string& to) {
  const std::string temp = temp_path_for(to);
  std::error_code ec;
  fs::copy_file(from, temp, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw IoError(to + ": cannot copy '" + from + "' there (" + ec.message() + ")");
  }
  try {
    publish(temp, to, to);
  } catch (const IoError&) {
    fs::remove(temp, ec);
    throw;
  }
}

}  // namespace attn::io

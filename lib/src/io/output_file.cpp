// Output targets, temporary files and their cleanup (output_file.hpp).
#include "attn/io/output_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "attn/core/error.hpp"

namespace attn::io {
namespace fs = std::filesystem;
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// What is at a path that is not a symbolic link, for messages.
const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// The path a chain of symbolic links ends at (which may not exist yet). ConfigError on a loop.
std::string follow_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::vector<char> buf(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4095) + 1);
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    if (n < 0) throw IoError(path + ": cannot read the symbolic link '" + p + "' (" + errno_text(errno) + ")");
    const fs::path link(std::string(buf.data(), static_cast<size_t>(n)));
    p = link.is_absolute() ? link.string() : (fs::path(p).parent_path() / link).string();
  }
  throw ConfigError(path + ": cannot write an output there: too many levels of symbolic links");
}

// ---------------------------------------------------------------------------------------------
// The temporary files of this process, for the signal handlers: fixed slots, no allocation.

constexpr int kSlots = 64;
constexpr size_t kSlotPath = 4096;
struct Slot {
  std::atomic<int> state{0};   // 0 free, 1 being filled, 2 holds a live temporary file
  char path[kSlotPath] = {};
};
std::array<Slot, kSlots> g_slots;
std::atomic<uint64_t> g_serial{0};

int list_temp(const std::string& path) {
  if (path.size() >= kSlotPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state = 2;
    return i;
  }
  return -1;   // full: the file is still removed by its TempFile and collected after a kill
}

void unlist_temp(int slot) {
  if (slot >= 0) g_slots[slot].state = 0;
}

extern "C" void remove_temps_and_die(int sig) {
  remove_temp_files_now();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

bool process_alive(long pid) {
  if (pid <= 0) return true;   // not ours to judge
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

// The pid in a temporary file name `.<name>.tmp.<pid>.<n>` of `name`, or -1.
long temp_pid(const std::string& entry, const std::string& name) {
  const std::string prefix = "." + name + ".tmp.";
  if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string rest = entry.substr(prefix.size());
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string::npos || dot + 1 == rest.size()) return -1;
  for (size_t i = 0; i < rest.size(); ++i)
    if (i != dot && (rest[i] < '0' || rest[i] > '9')) return -1;
  if (dot > 9) return -1;
  return std::stol(rest.substr(0, dot));
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

void write_fd(int fd, std::string_view bytes, const std::string& label) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(label + ": cannot write (" + errno_text(errno) + ")");
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace

OutputTarget resolve_output(const std::string& path) {
  OutputTarget out;
  out.path = path;
  if (path == "-") {
    out.mode = OutputMode::standard_output;
    out.target = path;
    return out;
  }
  out.target = follow_links(path);
  struct stat st {};
  if (::stat(out.target.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return out;
    if (S_ISCHR(st.st_mode)) {
      out.mode = OutputMode::device;
      return out;
    }
    throw ConfigError(path + ": cannot write an output there: it is " + file_type_name(st.st_mode) +
                      (out.target != path ? " (the symbolic link's target '" + out.target + "')" : std::string()) +
                      "; give a regular file, a new file name, - (standard output) or a character device");
  }
  if (errno != ENOENT) throw IoError(path + ": cannot write (" + errno_text(errno) + ")");
  const fs::path target(out.target);
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..")
    throw IoError(path + ": cannot write: the path names a folder, expected a file name");
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw IoError(path + ": cannot write: folder '" + dir.string() + "' does not exist");
  return out;
}

int collect_stale_temp_files(const std::string& target) {
  const fs::path t(target);
  const std::string name = t.filename().string();
  const std::string dir = t.has_parent_path() ? t.parent_path().string() : ".";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  int removed = 0;
  const long self = static_cast<long>(::getpid());
  while (const dirent* e = ::readdir(d)) {
    const long pid = temp_pid(e->d_name, name);
    if (pid < 0 || pid == self || process_alive(pid)) continue;
    if (::unlinkat(::dirfd(d), e->d_name, 0) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

TempFile::TempFile(std::string target) : target_(std::move(target)) {
  collect_stale_temp_files(target_);
  const fs::path t(target_);
  const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
  std::string name(1, '.');   // appended piece by piece: GCC 12 draws a false -Wrestrict from "." + ...
  name.append(t.filename().string()).append(".tmp.").append(std::to_string(::getpid()));
  name.append(".").append(std::to_string(g_serial++));
  path_ = (dir / name).string();
  slot_ = list_temp(path_);
}

TempFile::~TempFile() {
  if (!published_) ::unlink(path_.c_str());
  unlist_temp(slot_);
}

void TempFile::publish(const std::string& label) {
  fsync_path(path_, /*directory=*/false, label);
  if (std::rename(path_.c_str(), target_.c_str()) != 0)
    throw IoError(label + ": cannot rename the finished temporary file '" + path_ + "' over '" + target_ + "' (" +
                  errno_text(errno) + ")");
  published_ = true;
  unlist_temp(slot_);
  slot_ = -1;
  const fs::path t(target_);
  fsync_path(t.has_parent_path() ? t.parent_path().string() : ".", /*directory=*/true, label);
}

void remove_temp_files_now() noexcept {
  for (Slot& s : g_slots)
    if (s.state.load() == 2) ::unlink(s.path);
}

void remove_temp_files_on_signals() {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;   // nohup keeps SIGHUP ignored
    struct sigaction sa {};
    sa.sa_handler = remove_temps_and_die;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

void write_bytes(const std::string& path, std::string_view bytes) {
  const OutputTarget out = resolve_output(path);
  if (out.mode == OutputMode::standard_output) {
    std::fflush(stdout);   // whatever the process printed before goes first, in order
    write_fd(STDOUT_FILENO, bytes, "stdout");
    return;
  }
  if (out.mode == OutputMode::device) {
    const int fd = ::open(out.target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(path + ": cannot open the device to write (" + errno_text(errno) + ")");
    try {
      write_fd(fd, bytes, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return;
  }
  TempFile temp(out.target);
  const int fd = ::open(temp.path().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) throw IoError(path + ": cannot create '" + temp.path() + "' (" + errno_text(errno) + ")");
  try {
    write_fd(fd, bytes, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw IoError(path + ": cannot write (" + errno_text(errno) + ")");
  temp.publish(path);
}

}  // namespace attn::io

// Variable-length strings (h5py's default) are read in a child process. Their bytes live in
// HDF5's global heap, which carries no checksum, and libhdf5 1.10 follows a damaged heap entry
// into a crash or an endless loop (bit flips in valid files did so in 1 file of 70). Run in a
// child, such a read costs a DataError naming the file, not the process. attnlab writes
// fixed-length strings (hdf5_strings.cpp), so only files from other writers take this path.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "attn/core/memory.hpp"
#include "hdf5_impl.hpp"

namespace attn::io {
namespace {
std::atomic<std::chrono::milliseconds> g_timeout{std::chrono::milliseconds(0)};
}  // namespace

void set_string_reader_timeout(std::chrono::milliseconds timeout) { g_timeout = timeout; }

namespace detail {
namespace {

// The child's answer: 'K' then, per string, its length (uint64, native order) and bytes; or 'E'
// then a message.
void write_fully(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    p += n;
    size -= static_cast<size_t>(n);
  }
}

[[noreturn]] void child(int fd, size_t n, const std::function<bool(hid_t, char**)>& read) {
  // Default dispositions: not the parent's cleanup on SIGINT/SIGTERM/SIGHUP, and no handler of a
  // crash (a test framework's, a sanitizer's) that would carry on in this copy of the process.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
  // Silent: the parent reports the failure (a sanitizer's report of libhdf5's overrun would only
  // bury it).
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) ::dup2(null, STDERR_FILENO);
  H5Id mem = vlen_utf8_type();
  std::vector<char*> ptrs(n, nullptr);
  if (!read(mem.get(), ptrs.data())) {
    const std::string message = with_detail();
    write_fully(fd, "E", 1);
    write_fully(fd, message.data(), message.size());
    _exit(0);
  }
  write_fully(fd, "K", 1);
  for (const char* p : ptrs) {
    const uint64_t size = p ? std::strlen(p) : 0;
    write_fully(fd, &size, sizeof size);
    write_fully(fd, p, size);
  }
  _exit(0);   // no destructors, no atexit handlers, no stdio flushes: those are the parent's
}

std::string format_seconds(std::chrono::milliseconds t) {
  return t.count() % 1000 == 0 ? std::to_string(t.count() / 1000) + " s" : std::to_string(t.count()) + " ms";
}

std::string signal_text(int status) {
  if (WIFSIGNALED(status)) return std::string("the reader died of ") + strsignal(WTERMSIG(status));
  return "the reader exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

std::vector<std::string> read_vlen_isolated(const std::string& label, const std::string& what, size_t n,
                                            const std::function<bool(hid_t, char**)>& read) {
  // A generous deadline (a healthy read takes milliseconds), longer for very large datasets.
  const std::chrono::milliseconds set = g_timeout.load();
  const auto timeout = set.count() > 0 ? set
                                       : std::chrono::milliseconds(1000 * (20 + static_cast<int64_t>(n / 100000)));
  const size_t limit = memory_budget() / 2;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw IoError(label + ": cannot read " + what + ": no pipe (" + std::strerror(errno) + ")");
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw IoError(label + ": cannot read " + what + ": no process to read it in (" + std::strerror(errno) + ")");
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], n, read);
  }
  ::close(fds[1]);

  std::string bytes, failure;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      failure = "the reader did not finish within " + format_seconds(timeout);
      break;
    }
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;   // end of the answer (or a dead child: see its status below)
    bytes.append(buf, static_cast<size_t>(got));
    if (bytes.size() > limit) {
      failure = "the strings take more than " + format_bytes(static_cast<double>(limit)) +
                " (half the memory budget)";
      break;
    }
  }
  ::close(fds[0]);
  if (!failure.empty()) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string prefix = label + ": " + what + ": ";
  if (!failure.empty()) throw DataError(prefix + "cannot read its variable-length strings (" + failure + "); the file is damaged");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw DataError(prefix + "cannot read its variable-length strings (" + signal_text(status) + "); the file is damaged");
  if (bytes.empty()) throw DataError(prefix + "cannot read its variable-length strings; the file is damaged");
  if (bytes[0] == 'E') throw IoError(label + ": cannot read " + what + bytes.substr(1));

  std::vector<std::string> out;
  out.reserve(n);
  size_t at = 1;
  for (size_t i = 0; i < n; ++i) {
    uint64_t size = 0;
    if (bytes.size() - at < sizeof size) break;
    std::memcpy(&size, bytes.data() + at, sizeof size);
    at += sizeof size;
    if (bytes.size() - at < size) break;
    out.emplace_back(bytes, at, size);
    at += size;
  }
  if (out.size() != n || at != bytes.size())
    throw DataError(prefix + "cannot read its variable-length strings (the reader's answer is cut short)");
  return out;
}

}  // namespace detail
}  // namespace attn::io

// Outputs never destroy anything (io/output_file.hpp): special files are refused or streamed to,
// symbolic links are followed, temporary files go away on SIGTERM and after a SIGKILL; strings
// that are not UTF-8 and non-finite parameters are refused when read, naming the file.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/io/output_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode;
}

std::vector<std::string> temp_files(const test::TempDir& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path().filename().string());
  return out;
}

void write_value(const std::string& path, float v) {
  io::File f = io::File::create(path);
  f.write("/v", Tensor::from({1}, {v}));
  f.commit();
}

float read_value(const std::string& path) { return io::File::open_read(path).read("/v", DType::f32).data()[0]; }

// A character device of our own when we may make one (a null device, as root), else /dev/null:
// either way a device that a wrong writer would replace by a regular file.
std::string null_device(const test::TempDir& dir) {
  const std::string own = dir.file("null");
  if (::mknod(own.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) return own;
  return "/dev/null";
}

}  // namespace

TEST_CASE("outputs: a FIFO, a folder or a socket at the path is refused and left as it is", "[io][output-file]") {
  test::TempDir dir;
  const std::string fifo = dir.file("fifo.h5");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE_THROWS_AS(io::File::create(fifo), ConfigError);
  REQUIRE_THROWS_WITH(io::File::create(fifo), Contains(fifo + ": cannot write an output there: it is a FIFO"));
  CHECK(S_ISFIFO(mode_of(fifo)));
  REQUIRE_THROWS_AS(io::write_bytes(fifo, "x"), ConfigError);
  REQUIRE_THROWS_AS(io::copy_file_atomically(fifo, fifo), ConfigError);
  CHECK(S_ISFIFO(mode_of(fifo)));

  std::filesystem::create_directory(dir.file("folder"));
  REQUIRE_THROWS_WITH(io::File::create(dir.file("folder")), Contains("it is a folder"));
  CHECK(S_ISDIR(mode_of(dir.file("folder"))));

  const std::string sock = dir.file("s");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  if (sock.size() < sizeof addr.sun_path && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    REQUIRE_THROWS_WITH(io::File::create(sock), Contains("it is a socket"));
    CHECK(S_ISSOCK(mode_of(sock)));
  }
  ::close(fd);
  CHECK(temp_files(dir).empty());
}

TEST_CASE("outputs: a symbolic link is followed and its target replaced, the link kept", "[io][output-file]") {
  test::TempDir dir;
  std::filesystem::create_directory(dir.file("real"));
  const std::string target = dir.file("real/model.h5"), link = dir.file("link.h5");
  write_value(target, 1);
  std::filesystem::create_symlink("real/model.h5", link);   // relative, as `ln -s` makes them
  write_value(link, 2);
  CHECK(S_ISLNK(mode_of(link)));
  CHECK(read_value(target) == 2);

  const std::string dangling = dir.file("new.h5");   // a link to a file not written yet
  std::filesystem::create_symlink("real/new.h5", dangling);
  write_value(dangling, 3);
  CHECK(S_ISLNK(mode_of(dangling)));
  CHECK(read_value(dir.file("real/new.h5")) == 3);

  io::copy_file_atomically(target, dangling);
  CHECK(S_ISLNK(mode_of(dangling)));
  CHECK(read_value(dir.file("real/new.h5")) == 2);
  CHECK(temp_files(dir).empty());
}

TEST_CASE("outputs: a character device is streamed to and stays a device", "[io][output-file]") {
  test::TempDir dir;
  const std::string device = null_device(dir);
  INFO(device);
  {
    io::File f = io::File::create(device);
    f.write("/v", Tensor::from({3}, {1, 2, 3}));
    f.commit();
  }
  CHECK(S_ISCHR(mode_of(device)));
  write_value(dir.file("a.h5"), 1);
  io::copy_file_atomically(dir.file("a.h5"), device);
  io::write_bytes(device, "bytes");
  CHECK(S_ISCHR(mode_of(device)));
  CHECK(temp_files(dir).empty());
}

TEST_CASE("temporary files: SIGTERM removes them, and one left by SIGKILL is collected", "[io][output-file]") {
  test::TempDir dir;
  const std::string path = dir.file("out.h5");
  // A child writing an output is stopped by `sig` half-way: its temporary file exists then.
  auto interrupted = [&](int sig) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      io::remove_temp_files_on_signals();
      io::File f = io::File::create(path);
      f.write("/v", Tensor::from({1}, {9}));
      ::raise(sig);
      ::_exit(0);   // not reached
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));   // the handler ends the process by the same signal
    CHECK(WTERMSIG(status) == sig);
    return pid;
  };
  interrupted(SIGTERM);
  CHECK(temp_files(dir).empty());
  interrupted(SIGINT);
  CHECK(temp_files(dir).empty());

  const pid_t killed = interrupted(SIGKILL);   // nothing can run: its temporary file stays...
  const std::vector<std::string> left = temp_files(dir);
  REQUIRE(left.size() == 1);
  CHECK(left[0].starts_with(".out.h5.tmp." + std::to_string(killed) + "."));
  // ...until the next output to the same path, which removes those of dead processes only.
  const std::string alive = dir.file(".out.h5.tmp." + std::to_string(::getppid()) + ".0");
  const std::string other = dir.file(".other.h5.tmp." + std::to_string(killed) + ".0");
  test::write_text(alive, "a live process's temporary file");
  test::write_text(other, "the temporary file of another output");
  write_value(path, 4);
  CHECK(read_value(path) == 4);
  std::vector<std::string> now = temp_files(dir);
  std::sort(now.begin(), now.end());
  CHECK(now == std::vector<std::string>{std::filesystem::path(other).filename().string(),
                                        std::filesystem::path(alive).filename().string()});
}

TEST_CASE("reading a model refuses NaN and infinite values, naming the file and the tensor", "[io][output-file]") {
  test::TempDir dir;
  io::Checkpoint c;
  c.kind = "toy";
  c.params["layer/w"] = Tensor::from({3}, {1, NAN, 3});
  c.optimizer["adam/m/layer/w"] = Tensor::from({3}, {0, 0, 0});
  io::save_checkpoint(dir.file("nan.h5"), c);
  REQUIRE_THROWS_AS(io::load_checkpoint(dir.file("nan.h5")), DataError);
  REQUIRE_THROWS_WITH(io::load_checkpoint(dir.file("nan.h5")),
                      Contains(dir.file("nan.h5") + ": parameter '/params/layer/w' holds nan at element 1"));
  c.params["layer/w"] = Tensor::from({3}, {1, 2, 3});
  c.optimizer["adam/m/layer/w"] = Tensor::from({3}, {0, INFINITY, 0});
  io::save_checkpoint(dir.file("inf.h5"), c);
  REQUIRE_THROWS_WITH(io::load_checkpoint(dir.file("inf.h5")),
                      Contains("optimizer state '/optimizer/adam/m/layer/w' holds inf at element 1"));
}

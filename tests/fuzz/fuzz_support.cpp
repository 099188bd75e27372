#include "fuzz_support.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "attn/core/memory.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::fuzz {

void init() {
  static const bool done = [] {
    set_memory_budget(size_t{512} << 20);
    io::set_string_reader_timeout(std::chrono::milliseconds(2000));
    return true;
  }();
  (void)done;
}

std::string as_file(const uint8_t* data, size_t size, int slot) {
  static int fds[4] = {-1, -1, -1, -1};
  int& fd = fds[slot & 3];
  if (fd < 0) fd = ::memfd_create("attnlab-fuzz", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) throw std::runtime_error("memfd");
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) throw std::runtime_error("memfd write");
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace attn::fuzz

// Whole-file reads, plain or gzip (see gzip_file.hpp).
#include "attn/datasets/gzip_file.hpp"

#include <unistd.h>
#include <zlib.h>

#include <memory>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/core/memory.hpp"

namespace attn::datasets {

std::string read_file_bytes(const std::string& path, const std::string& what, size_t limit) {
  // gzread passes a file that is not gzip through unchanged, so one path reads both; "-" is
  // standard input (a duplicate of it, which gzclose may close).
  const int stdin_copy = path == "-" ? ::dup(STDIN_FILENO) : -1;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> gz(
      path == "-" ? (stdin_copy >= 0 ? gzdopen(stdin_copy, "rb") : nullptr) : gzopen(path.c_str(), "rb"), gzclose);
  if (!gz) {
    if (stdin_copy >= 0) ::close(stdin_copy);
    throw IoError("cannot open " + what + " '" + path + "'");
  }
  std::string bytes;
  std::vector<char> buf(1 << 16);
  for (;;) {
    const int got = gzread(gz.get(), buf.data(), static_cast<unsigned>(buf.size()));
    int code = Z_OK;
    std::string message = gzerror(gz.get(), &code);
    if (message.rfind(path + ": ", 0) == 0) message.erase(0, path.size() + 2);   // zlib prefixes the path
    // Z_DATA_ERROR: bad compressed data or CRC; Z_BUF_ERROR: the stream ended before its trailer.
    if (code == Z_DATA_ERROR || code == Z_BUF_ERROR)
      throw DataError(path + ": damaged gzip data (" + message + "): the file is truncated or corrupt; fetch it again");
    if (got < 0 || code != Z_OK) throw IoError("cannot read " + what + " '" + path + "': " + message);
    if (got == 0) break;
    if (bytes.size() + static_cast<size_t>(got) > limit)   // /dev/zero, or a file that is not what it says
      throw DataError(path + ": the " + what + " holds more than " + format_bytes(static_cast<double>(limit)) +
                      " (uncompressed); is it the right file?");
    bytes.append(buf.data(), static_cast<size_t>(got));
  }
  return bytes;
}

}  // namespace attn::datasets

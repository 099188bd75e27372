// Whole-file reads, plain or gzip (see gzip_file.hpp).
#include "attn/datasets/gzip_file.hpp"

#include <zlib.h>

#include <memory>
#include <vector>

#include "attn/core/error.hpp"

namespace attn::datasets {

std::string read_file_bytes(const std::string& path, const std::string& what) {
  // gzread passes a file that is not gzip through unchanged, so one path reads both.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> gz(gzopen(path.c_str(), "rb"), gzclose);
  if (!gz) throw IoError("cannot open " + what + " '" + path + "'");
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
    bytes.append(buf.data(), static_cast<size_t>(got));
  }
  return bytes;
}

}  // namespace attn::datasets

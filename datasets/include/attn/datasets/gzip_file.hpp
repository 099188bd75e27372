// Whole-file reads of plain or gzip-compressed input (detected by content, through zlib), for
// the importers: the text corpora and the MNIST IDX files.
//
// A gzip stream is read to its end, so that zlib checks its CRC and length trailer: a damaged
// or truncated download is refused instead of being read as a shorter file. (gzread alone
// returns the bytes it could decode and only records "unexpected end of file" as a soft error,
// Z_BUF_ERROR, which a reader must ask for.)
#pragma once
#include <cstddef>
#include <string>

namespace attn::datasets {

// The importers' inputs are corpora of megabytes: the largest file read whole.
inline constexpr size_t kMaxInputBytes = size_t{1} << 30;

// The content of the file at `path` ("-": standard input), gunzipped when it is gzip. `what`
// names the file's role in messages ("text file", "MNIST image file"). Throws IoError when the
// file cannot be opened or read, DataError (naming the file) when a gzip stream is corrupt or
// ends early, or when the content passes `limit` bytes (an endless /dev/zero, a wrong file).
std::string read_file_bytes(const std::string& path, const std::string& what, size_t limit = kMaxInputBytes);

}  // namespace attn::datasets

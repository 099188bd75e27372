// Whole-file reads of plain or gzip-compressed input (detected by content, through zlib), for
// the importers: the text corpora and the MNIST IDX files.
//
// A gzip stream is read to its end, so that zlib checks its CRC and length trailer: a damaged
// or truncated download is refused instead of being read as a shorter file. (gzread alone
// returns the bytes it could decode and only records "unexpected end of file" as a soft error,
// Z_BUF_ERROR, which a reader must ask for.)
#pragma once
#include <string>

namespace attn::datasets {

// The content of the file at `path`, gunzipped when it is gzip. `what` names the file's role in
// messages ("text file", "MNIST image file"). Throws IoError when the file cannot be opened or
// read, DataError (naming the file) when a gzip stream is corrupt or ends early.
std::string read_file_bytes(const std::string& path, const std::string& what);

}  // namespace attn::datasets

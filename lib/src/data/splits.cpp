// The splits of a data set (splits.hpp).
#include "attn/data/splits.hpp"

#include "attn/core/error.hpp"

namespace attn::data {

bool has_split(const io::File& file, const std::string& split) { return file.is_group("/" + split); }

void require_split(const io::File& file, const std::string& split) {
  if (has_split(file, split)) return;
  std::string found;
  for (const auto& name : file.list("/")) found += (found.empty() ? "" : ", ") + ("/" + name);
  throw FormatError(file.display_name() + ": no split '/" + split + "' (found: " +
                    (found.empty() ? std::string("nothing") : found) + ")");
}

void check_split_rows(const io::File& file, const std::string& split, const std::string& dataset, int64_t n) {
  if (split == "train" && n < 1)
    throw DataError(file.display_name() + ": dataset '" + dataset + "' has " + std::to_string(n) +
                    " rows; a training split needs at least 1");
}

}  // namespace attn::data

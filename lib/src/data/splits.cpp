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

}  // namespace attn::data

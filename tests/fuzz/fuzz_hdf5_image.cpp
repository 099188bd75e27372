// Any HDF5 image arriving on standard input or a pipe (`--data -`, `attn-data info --data -`):
// opened from memory as those are, then every group, dataset and attribute walked and read the
// way attn-data info does. Every outcome but a clean attn::Error is a finding.
#include <vector>

#include "attn/core/error.hpp"
#include "attn/io/hdf5_file.hpp"
#include "fuzz_support.hpp"

using namespace attn;

namespace {

void walk(const io::File& file, const std::string& group, int depth) {
  for (const std::string& key : file.attr_names(group)) (void)file.attr_text(group, key);
  if (depth > 8) return;
  for (const std::string& name : file.list(group)) {
    const std::string path = (group == "/" ? "/" : group + "/") + name;
    if (file.is_group(path)) {
      walk(file, path, depth + 1);
    } else if (file.is_dataset(path)) {
      const std::string type = file.type_name(path);
      if (type == "string") (void)file.read_strings(path);
      else if (type != "compound") (void)file.read(path);
      for (const std::string& key : file.attr_names(path)) (void)file.attr_text(path, key);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  try {
    const io::File file = io::File::open_image(std::vector<char>(data, data + size), "fuzz input");
    walk(file, "/", 0);
  } catch (const Error&) {
  }
  return 0;
}

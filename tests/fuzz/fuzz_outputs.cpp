// The tools' outputs read back by the next tool of a pipeline: translations and references
// (attn-bleu), source lengths, and the weight slices attn-plot draws; the first byte picks.
#include "attn/core/error.hpp"
#include "attn/data/corpus.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/plot/inputs.hpp"
#include "fuzz_support.hpp"

using namespace attn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  const int reader = fuzz::choose(data, size, 3);
  try {
    const io::File file = io::File::open_read(fuzz::as_file(data, size));
    switch (reader) {
      case 0:
        (void)data::read_hypotheses(file);
        break;
      case 1:
        (void)data::read_references(file, "test");
        (void)data::read_source_lengths(file, "test");
        break;
      default:
        for (const std::string& name : file.list_datasets("/")) {
          const std::string path = "/" + name;
          const Shape shape = file.shape(path);
          if (file.type_name(path) != "float32" || shape.size() < 2) continue;
          plot::Selection first;   // the first matrix of every leading axis, as attn-plot's default
          first.index.assign(shape.size() - 2, 0);
          (void)plot::read_slice(file, path, first, 2);
        }
        break;
    }
  } catch (const Error&) {
  }
  return 0;
}

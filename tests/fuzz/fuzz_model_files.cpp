// Model files and checkpoints of every family of the registry, as eval, translate, run, caption,
// classify and --resume load them (strict /config, parameters of the shapes it implies, finite
// values, vocabularies); the first byte picks the family.
#include "attn/core/error.hpp"
#include "fuzz_support.hpp"

using namespace attn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  const int family = fuzz::choose(data, size, fuzz::model_families());
  try {
    fuzz::load_model(family, fuzz::as_file(data, size));
  } catch (const Error&) {
  }
  return 0;
}

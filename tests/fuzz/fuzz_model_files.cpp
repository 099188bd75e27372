// Model files and checkpoints of every family, as eval, translate, run, caption, classify and
// --resume load them (strict /config, parameters of the shapes it implies, finite values,
// vocabularies); the first byte picks the family.
#include "attn/core/error.hpp"
#include "attn/train/caption_run.hpp"
#include "attn/train/classifier_run.hpp"
#include "attn/train/memnet_run.hpp"
#include "attn/train/ntm_run.hpp"
#include "attn/train/seq2seq_run.hpp"
#include "attn/train/transformer_run.hpp"
#include "fuzz_support.hpp"

using namespace attn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  const int family = fuzz::choose(data, size, 6);
  try {
    const std::string path = fuzz::as_file(data, size);
    switch (family) {
      case 0: (void)train::load_transformer(path); break;
      case 1: (void)train::load_seq2seq(path); break;
      case 2: (void)train::load_ntm(path); break;
      case 3: (void)train::load_memnet(path); break;
      case 4: (void)train::load_captioner(path); break;
      default: (void)train::load_classifier(path); break;
    }
  } catch (const Error&) {
  }
  return 0;
}

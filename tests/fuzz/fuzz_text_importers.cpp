// What attn-data imports from outside: plain or gzip text (attn-data text, parallel, multi30k),
// a pair of line-aligned files tokenised and encoded (the first half of the input is the source
// file, the second the target), bAbI task files, MNIST IDX images and labels; the first byte
// picks the reader.
#include "attn/core/error.hpp"
#include "attn/datasets/babi.hpp"
#include "attn/datasets/idx.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "fuzz_support.hpp"

using namespace attn;
using namespace attn::datasets;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  const int reader = fuzz::choose(data, size, 5);
  try {
    switch (reader) {
      case 0:
        (void)read_text_lines(fuzz::as_file(data, size));
        break;
      case 1: {
        const std::string src = fuzz::as_file(data, size / 2, 0), tgt = fuzz::as_file(data + size / 2, size - size / 2, 1);
        Splits<TextPairs> text;
        text.train = read_text_pairs(src, tgt);
        text.valid = text.test = text.train;
        ParallelConfig config;
        config.tokenize.lowercase = true;
        (void)build_parallel(text, config);
        break;
      }
      case 2:
        (void)read_babi_file(fuzz::as_file(data, size), 50);
        break;
      case 3:
        (void)read_idx_images(fuzz::as_file(data, size));
        break;
      default:
        (void)read_idx_labels(fuzz::as_file(data, size));
        break;
    }
  } catch (const Error&) {
  }
  return 0;
}

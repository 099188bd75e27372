// Data sets, as the train verbs read them (a file on disk: libhdf5's own file driver): token
// sets (Transformer, seq2seq, with their vocabularies and fingerprint), NTM sequence sets, bAbI
// question sets, caption sets and labelled sets; the first byte picks the reader.
#include "attn/core/error.hpp"
#include "attn/io/hdf5_file.hpp"
#include "fuzz_support.hpp"

using namespace attn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  const int reader = fuzz::choose(data, size, fuzz::kDataReaders);
  try {
    fuzz::read_data_set(reader, io::File::open_read(fuzz::as_file(data, size)));
  } catch (const Error&) {
  }
  return 0;
}

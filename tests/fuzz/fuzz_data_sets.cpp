// Data sets, as the train verbs read them (a file on disk: libhdf5's own file driver): token
// sets (Transformer, seq2seq, with their vocabularies and fingerprint), NTM sequence sets, bAbI
// question sets, caption sets and labelled sets; the first byte picks the reader.
#include "attn/core/error.hpp"
#include "attn/data/caption_data.hpp"
#include "attn/data/qa_data.hpp"
#include "attn/data/sequence_data.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/classifier_run.hpp"
#include "attn/train/data_fingerprint.hpp"
#include "attn/train/token_run.hpp"
#include "fuzz_support.hpp"

using namespace attn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  const int reader = fuzz::choose(data, size, 5);
  try {
    const io::File file = io::File::open_read(fuzz::as_file(data, size));
    switch (reader) {
      case 0: {
        const train::Vocabs v = train::read_data_vocabs(file);
        (void)train::read_training_data(file, {.src_vocab = v.src.size(), .tgt_vocab = v.tgt.size()});
        (void)train::fingerprint_data(file);
        break;
      }
      case 1:
        for (const char* split : {"train", "valid", "test"}) (void)data::read_sequence_split(file, split);
        break;
      case 2: {
        const data::Vocab v = data::read_qa_vocab(file);
        for (const char* split : {"train", "valid", "test"}) (void)data::read_qa_split(file, split, v.size());
        break;
      }
      case 3: {
        const data::Vocab v = data::read_caption_vocab(file);
        for (const char* split : {"train", "test"}) (void)data::read_caption_split(file, split, v.size());
        break;
      }
      default:
        (void)train::read_labelled_data(file);
        break;
    }
  } catch (const Error&) {
  }
  return 0;
}

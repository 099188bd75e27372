#include "fuzz_support.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "attn/core/memory.hpp"
#include "attn/data/caption_data.hpp"
#include "attn/data/qa_data.hpp"
#include "attn/data/sequence_data.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/caption_run.hpp"
#include "attn/train/classifier_run.hpp"
#include "attn/train/data_fingerprint.hpp"
#include "attn/train/memnet_run.hpp"
#include "attn/train/ntm_run.hpp"
#include "attn/train/seq2seq_run.hpp"
#include "attn/train/token_run.hpp"
#include "attn/train/transformer_run.hpp"

namespace attn::fuzz {

void init() {
  static const bool done = [] {
    set_memory_budget(size_t{512} << 20);
    io::set_string_reader_timeout(std::chrono::milliseconds(2000));
    return true;
  }();
  (void)done;
}

std::string as_file(const uint8_t* data, size_t size, int slot) {
  static int fds[4] = {-1, -1, -1, -1};
  int& fd = fds[slot & 3];
  if (fd < 0) fd = ::memfd_create("attnlab-fuzz", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) throw std::runtime_error("memfd");
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) throw std::runtime_error("memfd write");
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

void read_data_set(int reader, const io::File& file) {
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
}

void load_model(int family, const std::string& path) {
  switch (family) {
    case 0: (void)train::load_transformer(path); break;
    case 1: (void)train::load_seq2seq(path); break;
    case 2: (void)train::load_ntm(path); break;
    case 3: (void)train::load_memnet(path); break;
    case 4: (void)train::load_captioner(path); break;
    default: (void)train::load_classifier(path); break;
  }
}

}  // namespace attn::fuzz

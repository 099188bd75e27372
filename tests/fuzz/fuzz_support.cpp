#include "fuzz_support.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "attn/core/memory.hpp"
#include "attn/data/sequence_data.hpp"
#include "attn/families/caption/caption_data.hpp"
#include "attn/families/memnet/qa_data.hpp"
#include "attn/families/registry.hpp"
#include "attn/families/transformer/classifier_run.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/data_fingerprint.hpp"
#include "attn/train/token_run.hpp"

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
      const data::Vocab v = memnet::read_qa_vocab(file);
      for (const char* split : {"train", "valid", "test"}) (void)memnet::read_qa_split(file, split, v.size());
      break;
    }
    case 3: {
      const data::Vocab v = caption::read_caption_vocab(file);
      for (const char* split : {"train", "test"}) (void)caption::read_caption_split(file, split, v.size());
      break;
    }
    default:
      (void)transformer::read_labelled_data(file);
      break;
  }
}

int model_families() { return static_cast<int>(families::all().size()); }

void load_model(int family, const std::string& path) {
  families::all()[static_cast<size_t>(family % model_families())].load_model(path);
}

}  // namespace attn::fuzz

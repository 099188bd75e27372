// What every harness shares: the input as a file a reader can open by name, and the limits that
// turn a runaway input into the library's own error instead of libFuzzer's out-of-memory report.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace attn::io { class File; }

namespace attn::fuzz {

// Once per process: a memory budget of 512 MiB (an input that asks for more is a MemoryError, as
// it is for a user: the check under test), a 2 s deadline for the child that reads
// variable-length strings, and no progress output.
void init();

// The bytes as a file: an in-memory file (memfd) behind /proc/self/fd/N, rewritten for every
// input; `slot` keeps several such files apart (a pair of text files).
std::string as_file(const uint8_t* data, size_t size, int slot = 0);

// The data-set readers of the train verbs: 0 token sets (vocabularies, splits, fingerprint),
// 1 NTM sequence sets, 2 bAbI question sets, 3 caption sets, 4 labelled sets.
inline constexpr int kDataReaders = 5;
void read_data_set(int reader, const io::File& file);
// The model loaders: family k of the registry (attn/families/registry.hpp, in the order of
// cmake/Families.cmake) reads the file as its tools do; k is taken modulo the number of families.
int model_families();
void load_model(int family, const std::string& path);

// The first byte of an input chooses among `n` readers (the rest is the file): the fuzzer then
// learns which reader a file's bytes reach. 0 when the input is empty.
inline int choose(const uint8_t*& data, size_t& size, int n) {
  if (size == 0) return 0;
  const int k = data[0] % n;
  ++data;
  --size;
  return k;
}

}  // namespace attn::fuzz

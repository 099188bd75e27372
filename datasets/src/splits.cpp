// Split helpers: the input hash and size checks.
#include "attn/datasets/splits.hpp"

namespace attn::datasets {

uint64_t hash_bytes(const void* data, size_t bytes, uint64_t salt) {
  // FNV-1a over the bytes, then the splitmix64 finaliser so that every input bit reaches
  // every output bit.
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull ^ (salt * 0x9E3779B97F4A7C15ull);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

void check_sizes(const std::string& task, const SplitSizes& sizes) {
  if (sizes.train < 0 || sizes.valid < 0 || sizes.test < 0)
    throw ConfigError(task + ": split sizes must be >= 0, got train " + std::to_string(sizes.train) +
                      ", valid " + std::to_string(sizes.valid) + ", test " + std::to_string(sizes.test));
}

}  // namespace attn::datasets

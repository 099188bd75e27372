// Small MNIST-like IDX files for the mnist-strips tests (header-only: the targets that use it
// link zlib). Image i of n is 28 x 28 with one rectangle of ink whose place, size and
// intensity depend on i, so every image differs and its ink box is known; its label is
// (3 i + 1) mod 10. The files are gzip, named as the MNIST test set's.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace attn::test {

struct FixtureInk {
  int y0, x0, y1, x1;   // half-open, inside the 28 x 28 image
};
inline FixtureInk fixture_ink(int64_t i) {
  const int a = static_cast<int>(i % 7), b = static_cast<int>(i % 5);
  return {3 + a, 5 + b, 18 + b, 16 + a};
}
inline uint8_t fixture_label(int64_t i) { return static_cast<uint8_t>((3 * i + 1) % 10); }

inline void put_u32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xFF);
}

inline std::string idx_images_bytes(int64_t n) {
  std::string out;
  put_u32(out, 2051);   // IDX: unsigned bytes, 3 dimensions
  put_u32(out, static_cast<uint32_t>(n));
  put_u32(out, 28);
  put_u32(out, 28);
  for (int64_t i = 0; i < n; ++i) {
    const FixtureInk ink = fixture_ink(i);
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        const bool on = r >= ink.y0 && r < ink.y1 && c >= ink.x0 && c < ink.x1;
        out += static_cast<char>(on ? 40 + (i * 13 + r + c) % 216 : 0);
      }
  }
  return out;
}

inline std::string idx_labels_bytes(int64_t n) {
  std::string out;
  put_u32(out, 2049);   // IDX: unsigned bytes, 1 dimension
  put_u32(out, static_cast<uint32_t>(n));
  for (int64_t i = 0; i < n; ++i) out += static_cast<char>(fixture_label(i));
  return out;
}

inline void write_gzip_bytes(const std::string& path, const std::string& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  REQUIRE(gz != nullptr);
  REQUIRE(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(gz) == Z_OK);
}

// dir/t10k-images-idx3-ubyte.gz and dir/t10k-labels-idx1-ubyte.gz with n images.
inline void write_mnist_fixture(const std::string& dir, int64_t n) {
  write_gzip_bytes(dir + "/t10k-images-idx3-ubyte.gz", idx_images_bytes(n));
  write_gzip_bytes(dir + "/t10k-labels-idx1-ubyte.gz", idx_labels_bytes(n));
}

}  // namespace attn::test

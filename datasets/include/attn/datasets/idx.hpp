// The IDX files of MNIST (LeCun et al. 1998; http://yann.lecun.com/exdb/mnist/), plain or gzip:
//   images: magic 2051 (0x00000803: unsigned bytes, 3 dimensions), count, rows, cols, then
//           count * rows * cols pixel bytes, row-major, 0 background .. 255 ink;
//   labels: magic 2049 (0x00000801: unsigned bytes, 1 dimension), count, then count bytes.
// Header integers are 32-bit big-endian. Every deviation (short header, wrong magic, zero
// dimensions, a file shorter or longer than its header says, a label above 9, damaged gzip) is
// bad data: DataError naming the file, what was expected and what was found.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attn::datasets {

inline constexpr uint32_t kIdxImagesMagic = 2051, kIdxLabelsMagic = 2049;

struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;   // [count, rows, cols]
  const uint8_t* image(int64_t i) const { return pixels.data() + i * rows * cols; }
};

IdxImages read_idx_images(const std::string& path);
// Digit labels 0-9.
std::vector<uint8_t> read_idx_labels(const std::string& path);

}  // namespace attn::datasets

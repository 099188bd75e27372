// MNIST IDX files: header checks and payload (see idx.hpp).
#include "attn/datasets/idx.hpp"

#include "attn/core/error.hpp"
#include "attn/datasets/gzip_file.hpp"

namespace attn::datasets {
namespace {

uint32_t big_endian_u32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<uint8_t>(bytes[at + k]);
  return v;
}

// The header's dimensions after the magic, checked against the file's size: the payload must
// be exactly product(dims) bytes.
std::vector<uint64_t> read_header(const std::string& path, const std::string& bytes, uint32_t magic,
                                  const char* kind, const std::vector<const char*>& dim_names) {
  // The magic first: a labels file given for images is too short for their header, and the
  // magic says why.
  const size_t header = 4 * (1 + dim_names.size());
  const auto too_short = [&] {
    return DataError(path + ": too short for an IDX " + kind + " header (" + std::to_string(header) +
                     " bytes), found " + std::to_string(bytes.size()) + " bytes");
  };
  if (bytes.size() < 4) throw too_short();
  const uint32_t found = big_endian_u32(bytes, 0);
  if (found != magic)
    throw DataError(path + ": not an IDX " + kind + " file: magic number " + std::to_string(found) +
                    ", expected " + std::to_string(magic) +
                    (found == kIdxImagesMagic || found == kIdxLabelsMagic ? " (images and labels swapped?)" : ""));
  if (bytes.size() < header) throw too_short();
  std::vector<uint64_t> dims;
  const uint64_t available = bytes.size() - header;
  uint64_t payload = 1;   // the bytes the header promises
  bool beyond = false;    // ... more than 64 bits can count
  std::string described;
  for (size_t d = 0; d < dim_names.size(); ++d) {
    const uint64_t n = big_endian_u32(bytes, 4 * (1 + d));
    if (d > 0 && n == 0) throw DataError(path + ": the IDX header gives 0 " + dim_names[d]);
    dims.push_back(n);
    described += std::string(d ? ", " : "") + std::to_string(n) + " " + dim_names[d];
    beyond = beyond || __builtin_mul_overflow(payload, n, &payload);
  }
  if (beyond || payload != available)
    throw DataError(path + ": the IDX header promises " + described + " (" +
                    (beyond ? std::string("more than 2^64") : std::to_string(payload)) +
                    " bytes of data) but the file has " + std::to_string(available) + " after its " +
                    std::to_string(header) + "-byte header" +
                    (beyond || payload > available ? ": it is truncated" : ""));
  return dims;
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  const std::string bytes = read_file_bytes(path, "MNIST image file");
  const std::vector<uint64_t> dims = read_header(path, bytes, kIdxImagesMagic, "image", {"images", "rows", "cols"});
  IdxImages out;
  out.count = static_cast<int64_t>(dims[0]);
  out.rows = static_cast<int64_t>(dims[1]);
  out.cols = static_cast<int64_t>(dims[2]);
  out.pixels.assign(bytes.begin() + 16, bytes.end());
  return out;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  const std::string bytes = read_file_bytes(path, "MNIST label file");
  read_header(path, bytes, kIdxLabelsMagic, "label", {"labels"});
  std::vector<uint8_t> labels(bytes.begin() + 8, bytes.end());
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] > 9)
      throw DataError(path + ": label " + std::to_string(i) + " is " + std::to_string(labels[i]) +
                      ", expected a digit 0-9");
  return labels;
}

}  // namespace attn::datasets

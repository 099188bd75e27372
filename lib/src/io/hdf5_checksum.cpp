// The superblock checksum of an in-memory HDF5 image. HDF5 1.10's H5Fget_file_image copies a
// version-2+ superblock with its end-of-file address updated but its checksum not: the image is
// then refused by every reader ("incorrect metadata checksum"). The checksum is recomputed here,
// as HDF5 computes it (Bob Jenkins' lookup3 hash, initial value 0, over the superblock's bytes
// before the checksum); on an image that was already right this changes nothing.
#include <cstdint>
#include <cstring>
#include <vector>

#include "hdf5_impl.hpp"

namespace attn::io::detail {
namespace {

constexpr uint32_t rot(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

// lookup3's hashlittle, byte by byte (alignment-free), as H5_checksum_lookup3.
uint32_t lookup3(const unsigned char* k, size_t length, uint32_t initval) {
  uint32_t a, b, c;
  a = b = c = 0xdeadbeef + static_cast<uint32_t>(length) + initval;
  auto word = [&](size_t i) {
    return uint32_t{k[i]} | uint32_t{k[i + 1]} << 8 | uint32_t{k[i + 2]} << 16 | uint32_t{k[i + 3]} << 24;
  };
  while (length > 12) {
    a += word(0);
    b += word(4);
    c += word(8);
    a -= c; a ^= rot(c, 4);  c += b;
    b -= a; b ^= rot(a, 6);  a += c;
    c -= b; c ^= rot(b, 8);  b += a;
    a -= c; a ^= rot(c, 16); c += b;
    b -= a; b ^= rot(a, 19); a += c;
    c -= b; c ^= rot(b, 4);  b += a;
    length -= 12;
    k += 12;
  }
  if (length == 0) return c;
  // The last 1..12 bytes, zero-padded: the same sums as lookup3's fall-through switch.
  unsigned char tail[12] = {};
  std::memcpy(tail, k, length);
  k = tail;
  a += word(0);
  b += word(4);
  c += word(8);
  c ^= b; c -= rot(b, 14);
  a ^= c; a -= rot(c, 11);
  b ^= a; b -= rot(a, 25);
  c ^= b; c -= rot(b, 16);
  a ^= c; a -= rot(c, 4);
  b ^= a; b -= rot(a, 14);
  c ^= b; c -= rot(b, 24);
  return c;
}

}  // namespace

uint32_t metadata_checksum(const void* data, size_t size) {
  return lookup3(static_cast<const unsigned char*>(data), size, 0);
}

void refresh_superblock_checksum(std::vector<char>& image) {
  static constexpr unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (image.size() < 12 || std::memcmp(image.data(), kSignature, 8) != 0) return;
  const auto version = static_cast<unsigned char>(image[8]);
  const auto offsets = static_cast<unsigned char>(image[9]);
  if (version < 2) return;   // versions 0 and 1 carry no checksum
  // signature, version, sizes of offsets and lengths, flags; four addresses; the checksum.
  const size_t body = 12 + 4 * size_t{offsets};
  if (image.size() < body + 4) return;
  const uint32_t sum = metadata_checksum(image.data(), body);
  for (int i = 0; i < 4; ++i) image[body + i] = static_cast<char>(sum >> (8 * i));
}

}  // namespace attn::io::detail

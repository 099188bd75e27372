// Data set fingerprints (data_fingerprint.hpp).
#include "attn/train/data_fingerprint.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/data/rows.hpp"
#include "attn/dist/communicator.hpp"

namespace attn::train {
namespace {

constexpr const char* kGroup = "/trained_on";

// A 64-bit hash fed 8 bytes at a time (a multiply-xorshift mix per word, as in MurmurHash's
// finaliser): not cryptographic, but any change of a value, a length or the order changes it
// with probability 1 - 2^-64, and fast enough that hashing a split costs about what reading it
// does (bench/README.md, "The training data's fingerprint").
class Hasher {
 public:
  void bytes(const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    word(n);
    for (; n >= 8; n -= 8, c += 8) {
      uint64_t w;
      std::memcpy(&w, c, 8);
      word(w);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, c, n);
    word(tail);
  }
  void text(std::string_view s) { bytes(s.data(), s.size()); }
  void word(uint64_t w) {
    h_ ^= w + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2);
    h_ ^= h_ >> 33;
    h_ *= 0xff51afd7ed558ccdULL;
    h_ ^= h_ >> 33;
  }
  uint64_t value() const { return h_; }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

// The block of rows hashed on its own: about `values` values, whole rows.
int64_t block_rows(const Shape& shape, int64_t values) {
  int64_t row = 1;
  for (size_t d = 1; d < shape.size(); ++d) row *= std::max<int64_t>(shape[d], 1);
  return std::max<int64_t>(1, values / row);
}

DType read_type(const std::string& type) { return type.starts_with("float") ? DType::f32 : DType::i32; }
bool numeric(const std::string& type) {
  return type.starts_with("float") || type.starts_with("int") || type.starts_with("uint");
}

// A dataset's path, type and shape, then its values: strings one by one; numbers a block of rows
// at a time, each block hashed on its own by the rank whose share it is in (data::share_rows) and
// the block hashes, gathered, fed in order. So the value does not depend on the number of ranks,
// and a job reads each block once.
void hash_dataset(const io::File& f, const std::string& path, Hasher& h, dist::Communicator& ranks, int64_t block) {
  const std::string type = f.type_name(path);
  const Shape shape = f.shape(path);
  h.text(path);
  h.text(type);
  for (int64_t d : shape) h.word(static_cast<uint64_t>(d));
  if (type == "string") {
    for (const std::string& s : f.read_strings(path)) h.text(s);
    return;
  }
  if (!numeric(type)) return;   // compound and the like: name, type and shape only
  if (shape.empty()) {
    const Tensor t = f.read(path, read_type(type));
    h.bytes(t.raw(), t.byte_size());
    return;
  }
  const int64_t rows = block_rows(shape, block), blocks = (shape[0] + rows - 1) / rows;
  const data::RowShare share = data::share_rows(blocks, ranks);
  std::vector<uint64_t> mine;
  for (int64_t b = share.begin; b < share.end; ++b) {
    const Tensor t = f.read_rows(path, read_type(type), b * rows, std::min(shape[0], (b + 1) * rows));
    Hasher one;
    one.bytes(t.raw(), t.byte_size());
    mine.push_back(one.value());
  }
  const std::vector<std::byte> all =
      data::gather_shares(std::as_bytes(std::span(mine)), share, blocks, sizeof(uint64_t), ranks);
  for (int64_t b = 0; b < blocks; ++b) {
    uint64_t w;
    std::memcpy(&w, all.data() + b * sizeof w, sizeof w);
    h.word(w);
  }
}

std::string hash_group(const io::File& f, const std::string& group, dist::Communicator& ranks, int64_t block) {
  Hasher h;
  if (f.is_group(group))
    for (const std::string& name : f.list_datasets(group)) hash_dataset(f, group + "/" + name, h, ranks, block);
  return h.hex();
}

}  // namespace

DataFingerprint fingerprint_data(const io::File& data, dist::Communicator& ranks, int64_t block) {
  if (!data.is_group("/train"))
    throw FormatError(data.display_name() + ": no group '/train' (the training split) to fingerprint");
  if (block < 1) throw ConfigError("fingerprint_data: blocks of " + std::to_string(block) + " values");
  return {data.display_name(), hash_group(data, "/vocab", ranks, block), hash_group(data, "/train", ranks, block), block};
}

void write_fingerprint(io::File& model, const DataFingerprint& fp) {
  model.set_attr(kGroup, "data", fp.source);
  model.set_attr(kGroup, "vocab_fingerprint", fp.vocab);
  model.set_attr(kGroup, "train_fingerprint", fp.train);
  model.set_attr(kGroup, "train_fingerprint_block", fp.block);
}

std::optional<DataFingerprint> read_fingerprint(const io::File& model) {
  if (!model.exists(kGroup) || !model.has_attr(kGroup, "vocab_fingerprint")) return std::nullopt;
  return DataFingerprint{model.has_attr(kGroup, "data") ? model.attr_string(kGroup, "data") : "",
                         model.attr_string(kGroup, "vocab_fingerprint"), model.attr_string(kGroup, "train_fingerprint"),
                         model.has_attr(kGroup, "train_fingerprint_block") ? model.attr_int(kGroup, "train_fingerprint_block")
                                                                           : 0};
}

void check_same_data(const std::optional<DataFingerprint>& trained, const std::string& model_file,
                     const DataFingerprint& data, bool allow_new_data) {
  if (!trained) {
    if (allow_new_data) return;
    throw DataError(model_file + ": holds no fingerprint of the data it was trained on (/trained_on: written "
                    "before attnlab stored one), so it cannot be checked against '" + data.source +
                    "'; give --allow-new-data to continue on this data anyway");
  }
  if (trained->vocab != data.vocab)
    throw DataError(model_file + ": was trained with other vocabularies than '" + data.source + "' has (/vocab "
                    "fingerprint " + trained->vocab + " of '" + trained->source + "', found " + data.vocab +
                    "); the model's embeddings would mean other words; resume with the data set it was trained on");
  if (!allow_new_data && trained->block != data.block)
    throw DataError(model_file + ": holds a /train fingerprint that an older attnlab computed another way (one hash "
                    "over the whole split; this one hashes blocks of " + std::to_string(data.block) + " values, which "
                    "the ranks of a data-parallel job share out), so it cannot be compared with the /train of '" +
                    data.source + "'; the vocabularies are the same: give --allow-new-data to continue on it");
  if (!allow_new_data && trained->train != data.train)
    throw DataError(model_file + ": was trained on another training split than the one of '" + data.source +
                    "' (/train fingerprint " + trained->train + " of '" + trained->source + "', found " + data.train +
                    "); resume with the data set it was trained on, or give --allow-new-data to continue on this "
                    "one (same vocabularies)");
}

}  // namespace attn::train

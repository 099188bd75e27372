// Data set fingerprints (data_fingerprint.hpp).
#include "attn/train/data_fingerprint.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "attn/core/error.hpp"

namespace attn::train {
namespace {

constexpr const char* kGroup = "/trained_on";
constexpr int64_t kBlockElements = int64_t{1} << 22;   // values read at a time (16 MiB of float32)

// A 64-bit hash fed 8 bytes at a time (a multiply-xorshift mix per word, as in MurmurHash's
// finaliser): not cryptographic, but any change of a value, a length or the order changes it
// with probability 1 - 2^-64, at a few GB/s.
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
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

void hash_dataset(const io::File& f, const std::string& path, Hasher& h) {
  const std::string type = f.type_name(path);
  const Shape shape = f.shape(path);
  h.text(path);
  h.text(type);
  for (int64_t d : shape) h.word(static_cast<uint64_t>(d));
  if (type == "string") {
    for (const std::string& s : f.read_strings(path)) h.text(s);
    return;
  }
  const bool real = type.starts_with("float"), integer = type.starts_with("int") || type.starts_with("uint");
  if (!real && !integer) return;   // compound and the like: name, type and shape only
  const DType dtype = real ? DType::f32 : DType::i32;
  auto feed = [&](const Tensor& t) {
    h.bytes(t.raw(), t.byte_size());
  };
  if (shape.empty()) {
    feed(f.read(path, dtype));
    return;
  }
  int64_t row = 1;
  for (size_t d = 1; d < shape.size(); ++d) row *= std::max<int64_t>(shape[d], 1);
  const int64_t block = std::max<int64_t>(1, kBlockElements / row);
  for (int64_t begin = 0; begin < shape[0]; begin += block)
    feed(f.read_rows(path, dtype, begin, std::min(shape[0], begin + block)));
}

std::string hash_group(const io::File& f, const std::string& group) {
  Hasher h;
  if (f.is_group(group))
    for (const std::string& name : f.list_datasets(group)) hash_dataset(f, group + "/" + name, h);
  return h.hex();
}

}  // namespace

DataFingerprint fingerprint_data(const io::File& data) {
  if (!data.is_group("/train"))
    throw FormatError(data.display_name() + ": no group '/train' (the training split) to fingerprint");
  return {data.display_name(), hash_group(data, "/vocab"), hash_group(data, "/train")};
}

void write_fingerprint(io::File& model, const DataFingerprint& fp) {
  model.set_attr(kGroup, "data", fp.source);
  model.set_attr(kGroup, "vocab_fingerprint", fp.vocab);
  model.set_attr(kGroup, "train_fingerprint", fp.train);
}

std::optional<DataFingerprint> read_fingerprint(const io::File& model) {
  if (!model.exists(kGroup) || !model.has_attr(kGroup, "vocab_fingerprint")) return std::nullopt;
  return DataFingerprint{model.has_attr(kGroup, "data") ? model.attr_string(kGroup, "data") : "",
                         model.attr_string(kGroup, "vocab_fingerprint"), model.attr_string(kGroup, "train_fingerprint")};
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
  if (!allow_new_data && trained->train != data.train)
    throw DataError(model_file + ": was trained on another training split than the one of '" + data.source +
                    "' (/train fingerprint " + trained->train + " of '" + trained->source + "', found " + data.train +
                    "); resume with the data set it was trained on, or give --allow-new-data to continue on this "
                    "one (same vocabularies)");
}

}  // namespace attn::train

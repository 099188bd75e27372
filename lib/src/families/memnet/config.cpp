// MemN2NConfig: names of the enumerations, range checks and the /config attributes.
#include <string>

#include "attn/families/memnet/model.hpp"
#include "attn/io/config_fields.hpp"
#include "attn/io/config_limits.hpp"

namespace attn::memnet {
MemN2NEncoding parse_memn2n_encoding(const std::string& name) {
  if (name == "bow") return MemN2NEncoding::bow;
  if (name == "position") return MemN2NEncoding::position;
  if (name == "position-fixed") return MemN2NEncoding::position_fixed;
  throw ConfigError("unknown encoding '" + name + "' (expected bow, position or position-fixed)");
}
const char* memn2n_encoding_name(MemN2NEncoding encoding) {
  switch (encoding) {
    case MemN2NEncoding::bow: return "bow";
    case MemN2NEncoding::position: return "position";
    case MemN2NEncoding::position_fixed: return "position-fixed";
  }
  return "?";
}

MemN2NTying parse_memn2n_tying(const std::string& name) {
  if (name == "adjacent") return MemN2NTying::adjacent;
  if (name == "layerwise") return MemN2NTying::layerwise;
  throw ConfigError("unknown tying '" + name + "' (expected adjacent or layerwise)");
}
const char* memn2n_tying_name(MemN2NTying tying) {
  return tying == MemN2NTying::adjacent ? "adjacent" : "layerwise";
}

void MemN2NConfig::validate() const {
  io::check_range("memnet", "vocab_size", vocab_size, 1, io::kMaxVocab);
  io::check_range("memnet", "embedding_size", embedding_size, 1, io::kMaxWidth);
  io::check_range("memnet", "hops", hops, 1, io::kMaxCount);
  io::check_range("memnet", "memory_size", memory_size, 1, io::kMaxLength);
  io::check_range("memnet", "sentence_length", sentence_length, 0, io::kMaxLength);
  io::check_range("memnet", "empty_slots", empty_slots, 0, io::kMaxLength);
  io::check_config("memnet", encoding != MemN2NEncoding::position_fixed || sentence_length >= 1,
                   "position-fixed encoding needs sentence_length >= 1, got " + std::to_string(sentence_length));
}

std::map<std::string, io::AttrValue> MemN2NConfig::to_attrs() const { return io::write_fields(*this); }

MemN2NConfig MemN2NConfig::from_attrs(const std::map<std::string, io::AttrValue>& attrs, const std::string& source) {
  return io::read_fields<MemN2NConfig>(attrs, source);
}

}  // namespace attn::memnet

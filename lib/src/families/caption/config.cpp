// CaptionerConfig: the encoder list, the attention kinds, range checks and /config attributes.
#include <algorithm>
#include <cmath>
#include <string>

#include "attn/families/caption/model.hpp"
#include "attn/io/config_fields.hpp"
#include "attn/io/config_limits.hpp"

namespace attn::caption {
namespace {

// The positive integer that is all of `text`, or 0.
int64_t positive_number(const std::string& text) {
  if (text.empty() || text.size() > 6) return 0;
  int64_t v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return 0;
    v = 10 * v + (ch - '0');
  }
  return v;
}

}  // namespace

std::vector<ConvEncoderLayer> parse_encoder(const std::string& spec) {
  std::vector<ConvEncoderLayer> layers;
  size_t begin = 0;
  while (begin <= spec.size()) {
    const size_t end = std::min(spec.find(',', begin), spec.size());
    const std::string item = spec.substr(begin, end - begin);
    ConvEncoderLayer layer;
    const size_t x = item.find('x');
    if (item.rfind("conv", 0) == 0 && x != std::string::npos) {
      layer = {ConvEncoderLayer::conv, positive_number(item.substr(4, x - 4)), positive_number(item.substr(x + 1))};
    } else if (item.rfind("pool", 0) == 0) {
      layer = {ConvEncoderLayer::pool, 0, positive_number(item.substr(4))};
    }
    const bool ok = layer.size >= 1 && (layer.kind == ConvEncoderLayer::pool || layer.channels >= 1);
    if (!ok)
      throw ConfigError("encoder item '" + item + "' of '" + spec +
                        "' is not convKxS (K output channels, an S x S kernel, e.g. conv32x3) nor poolP (P x P max "
                        "pooling, e.g. pool2)");
    layers.push_back(layer);
    begin = end + 1;
  }
  return layers;
}

CaptionAttention parse_caption_attention(const std::string& name) {
  if (name == "soft") return CaptionAttention::soft;
  if (name == "mean") return CaptionAttention::mean;
  throw ConfigError("unknown caption attention '" + name + "' (expected soft or mean)");
}
const char* caption_attention_name(CaptionAttention attention) {
  return attention == CaptionAttention::soft ? "soft" : "mean";
}

CaptionerConfig::Grid CaptionerConfig::grid() const {
  Grid g{channels, height, width};
  for (const ConvEncoderLayer& layer : parse_encoder(encoder)) {
    if (layer.kind == ConvEncoderLayer::conv) {
      g.D = layer.channels;
      g.h = g.h + 2 * (layer.size / 2) - layer.size + 1;
      g.w = g.w + 2 * (layer.size / 2) - layer.size + 1;
    } else {
      g.h /= layer.size;
      g.w /= layer.size;
    }
    if (g.h < 1 || g.w < 1)
      throw ConfigError("captioner config: the encoder '" + encoder + "' leaves no location of a " +
                        std::to_string(height) + " x " + std::to_string(width) + " image");
  }
  if (coords) g.D += 2;
  return g;
}

void CaptionerConfig::validate() const {
  // The reserved ids and a word.
  io::check_range("captioner", "vocab", vocab, data::kFirstRegularToken + 1, io::kMaxVocab);
  io::check_range("captioner", "channels", channels, 1, 4096);
  io::check_range("captioner", "height", height, 1, 4096);
  io::check_range("captioner", "width", width, 1, 4096);
  io::check_range("captioner", "embed_dim", embed_dim, 1, io::kMaxWidth);
  io::check_range("captioner", "hidden", hidden, 1, io::kMaxWidth);
  io::check_range("captioner", "attention_dim", attention_dim, 1, io::kMaxWidth);
  io::check_config("captioner", alpha_c >= 0.0f && std::isfinite(alpha_c),
                   "alpha_c must be >= 0, got " + std::to_string(alpha_c));
  io::check_config("captioner", alpha_entropy >= 0.0f && std::isfinite(alpha_entropy),
                   "alpha_entropy must be >= 0, got " + std::to_string(alpha_entropy));
  io::check_config("captioner", dropout >= 0.0f && dropout < 1.0f,
                   "dropout must be in [0, 1), got " + std::to_string(dropout));
  io::check_config("captioner", attention == CaptionAttention::soft || !gate,
                   "the gate needs soft attention (attention is mean)");
  (void)grid();   // the encoder list parses and leaves a location
}

std::map<std::string, io::AttrValue> CaptionerConfig::to_attrs() const { return io::write_fields(*this); }

CaptionerConfig CaptionerConfig::from_attrs(const std::map<std::string, io::AttrValue>& attrs,
                                            const std::string& source) {
  return io::read_fields<CaptionerConfig>(attrs, source);
}

}  // namespace attn::caption

// The ranges of model configuration sizes (config_limits.hpp).
#include "attn/io/config_limits.hpp"

#include <string>

#include "attn/core/error.hpp"

namespace attn::io {

void check_range(const char* family, const char* field, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi)
    throw ConfigError(std::string(family) + " config: " + field + " must be in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got " + std::to_string(value));
}

void check_config(const char* family, bool ok, const std::string& message) {
  if (!ok) throw ConfigError(std::string(family) + " config: " + message);
}

}  // namespace attn::io

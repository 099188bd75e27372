// Private helpers of the optim sources: configuration checks with uniform messages and the size
// above which an elementwise update loop is split across OpenMP threads.
#pragma once
#include "attn/core/threading.hpp"
#include <cstdint>
#include <sstream>
#include <string>

#include "attn/core/error.hpp"

namespace attn::optim::detail {

inline constexpr int64_t kParallelMin = kParallelMinElements;   // core/threading.hpp

// "0.1", "1e-08": the shortest readable rendering of a configuration value.
inline std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Throws ConfigError "<who>: <field> must be <want>, got <value>" unless ok. Write `ok` as the
// valid range (x >= 0 && x < 1) so that NaN fails it.
inline void require(bool ok, const std::string& who, const char* field, const char* want, double got) {
  if (!ok) throw ConfigError(who + ": " + field + " must be " + want + ", got " + number(got));
}

}  // namespace attn::optim::detail

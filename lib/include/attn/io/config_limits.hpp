// The ranges of the sizes in a model's configuration (its /config, or the options that make it),
// checked by every family's validate() before a constructor does arithmetic with them.
//
// A size comes from a user or from a file that may be damaged or written by another program:
// unchecked, 2^63 - 1 rows made `4 * hidden` overflow (undefined behaviour) and 10^9 layers or
// hops a loop that filled the memory before any tensor was allocated (found by
// tests/fuzz/fuzz_semantic). The bounds are far above anything trained on one machine and low
// enough that every product a constructor forms (gates x width, vocabulary x width, a layer's
// weights, layers x that) stays far inside int64; what is in range but too big for the machine is
// then refused by the memory budget (core/memory.hpp), naming the bytes.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

namespace attn::io {

inline constexpr int64_t kMaxWidth = int64_t{1} << 16;    // units of a layer, an embedding's width
inline constexpr int64_t kMaxCount = int64_t{1} << 10;    // layers, heads, hops
inline constexpr int64_t kMaxLength = int64_t{1} << 20;   // positions, memory slots and rows
inline constexpr int64_t kMaxVocab = std::numeric_limits<int32_t>::max();   // ids are int32; classes too

// Throws ConfigError "<family> config: <field> must be in [lo, hi], got <value>" unless
// lo <= value <= hi.
void check_range(const char* family, const char* field, int64_t value, int64_t lo, int64_t hi);
// Throws ConfigError "<family> config: <message>" unless ok (a rule between fields).
void check_config(const char* family, bool ok, const std::string& message);

}  // namespace attn::io

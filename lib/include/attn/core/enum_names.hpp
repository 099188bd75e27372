// The names of an enum's values, written once as a table that gives both directions: the name
// stored in /config and accepted on the command line, and the value parsed from it, with an error
// that lists every accepted name.
//
//   inline constexpr EnumNames<NormPosition, 2> kNormNames{{{NormPosition::post, "post"},
//                                                          {NormPosition::pre, "pre"}}};
//   enum_name(kNormNames, NormPosition::pre)          -> "pre"
//   parse_enum(kNormNames, "norm position", "mid")    -> ConfigError "unknown norm position 'mid'
//                                                        (expected post or pre)"
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "attn/core/error.hpp"

namespace attn {

template <class E, size_t N>
using EnumNames = std::array<std::pair<E, const char*>, N>;

// "a, b or c".
template <class E, size_t N>
std::string enum_choices(const EnumNames<E, N>& names) {
  std::string out;
  for (size_t i = 0; i < N; ++i) out += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i].second);
  return out;
}

// "?" for a value the table does not hold (a cast integer).
template <class E, size_t N>
const char* enum_name(const EnumNames<E, N>& names, E value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "?";
}

// Throws ConfigError "unknown <what> '<name>' (expected a, b or c)".
template <class E, size_t N>
E parse_enum(const EnumNames<E, N>& names, const std::string& what, std::string_view name) {
  for (const auto& [v, n] : names)
    if (name == n) return v;
  throw ConfigError("unknown " + what + " '" + std::string(name) + "' (expected " + enum_choices(names) + ")");
}

}  // namespace attn

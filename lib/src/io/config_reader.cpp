// ConfigReader: typed lookups in a /config attribute map (config_reader.hpp).
#include "attn/io/config_reader.hpp"

namespace attn::io {

ConfigReader::ConfigReader(const std::map<std::string, AttrValue>& attrs, std::string source)
    : attrs_(attrs), source_(std::move(source)) {}

std::string ConfigReader::where(const std::string& key) const { return source_ + ": /config attribute '" + key + "'"; }

const AttrValue& ConfigReader::at(const std::string& key) const {
  const auto it = attrs_.find(key);
  if (it != attrs_.end()) return it->second;
  std::string found;
  for (const auto& [k, v] : attrs_) found += (found.empty() ? "" : ", ") + k;
  throw FormatError(source_ + ": no attribute '" + key + "' in /config (" +
                    (found.empty() ? std::string("it is empty") : "found: " + found) + ")");
}

void ConfigReader::wrong_type(const std::string& key, const char* want) const {
  static constexpr const char* kNames[] = {"a string", "an integer", "a number"};
  throw FormatError(where(key) + " is " + kNames[at(key).index()] + ", expected " + want);
}

const std::string& ConfigReader::text(const std::string& key) const {
  if (const auto* v = std::get_if<std::string>(&at(key))) return *v;
  wrong_type(key, "a string");
}

int64_t ConfigReader::integer(const std::string& key) const {
  if (const auto* v = std::get_if<int64_t>(&at(key))) return *v;
  wrong_type(key, "an integer");
}

double ConfigReader::real(const std::string& key) const {
  const AttrValue& v = at(key);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  wrong_type(key, "a number");
}

bool ConfigReader::flag(const std::string& key) const {
  const int64_t v = integer(key);
  if (v != 0 && v != 1) throw FormatError(where(key) + " is " + std::to_string(v) + ", expected 0 or 1");
  return v == 1;
}

}  // namespace attn::io

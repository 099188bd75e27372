// Typed, strict reading of a model's /config attributes, shared by every model family's
// from_attrs and by Checkpoint's lookups: a missing attribute, one of another type, an unknown
// enumeration name or a value that fails the family's validation is a FormatError naming the
// source (the model file) and the attribute. A bad /config is bad input, not a usage error.
//
//   const io::ConfigReader r(attrs, "tf.h5");
//   c.d_model = r.integer("d_model");
//   c.arch = r.parsed("arch", arch_from_string);   // parse throws ConfigError on an unknown name
//   r.validated(c);                                 // c.validate(), as FormatError
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "attn/core/error.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::io {

class ConfigReader {
 public:
  // source: how messages name the file ("tf.h5"; "/config" when it is not known).
  ConfigReader(const std::map<std::string, AttrValue>& attrs, std::string source);

  bool has(const std::string& key) const { return attrs_.count(key) > 0; }
  const std::string& text(const std::string& key) const;
  int64_t integer(const std::string& key) const;
  double real(const std::string& key) const;   // an integer is accepted
  bool flag(const std::string& key) const;     // an integer 0 or 1

  // The string attribute `key` through parse (an enumeration's from-name function); its
  // ConfigError becomes a FormatError naming the source and the attribute.
  template <class Parse>
  auto parsed(const std::string& key, Parse parse) const {
    const std::string& name = text(key);
    try {
      return parse(name);
    } catch (const ConfigError& e) {
      throw FormatError(where(key) + ": " + e.what());
    }
  }

  // config.validate(), its ConfigError as a FormatError naming the source.
  template <class Config>
  void validated(const Config& config) const {
    try {
      config.validate();
    } catch (const ConfigError& e) {
      throw FormatError(source_ + ": /config: " + e.what());
    }
  }

 private:
  const AttrValue& at(const std::string& key) const;
  [[noreturn]] void wrong_type(const std::string& key, const char* want) const;
  std::string where(const std::string& key) const;   // "tf.h5: /config attribute 'arch'"

  const std::map<std::string, AttrValue>& attrs_;
  std::string source_;
};

}  // namespace attn::io

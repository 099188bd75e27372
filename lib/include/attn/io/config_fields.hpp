// A model configuration lists its fields once — their /config names and, for an enumeration, its
// name and parse functions — and every family's to_attrs / from_attrs is this one pair:
//
//   struct FooConfig {
//     int64_t width = 8;  float dropout = 0.1f;  bool bias = true;  Kind kind = Kind::a;
//     template <class C, class V> static void fields(C& c, V& v) {   // C: FooConfig or const FooConfig
//       v("width", c.width);  v("dropout", c.dropout);  v("bias", c.bias);
//       v("kind", c.kind, kind_name, kind_from_string);
//       v("smoothing", c.smoothing, io::AbsentMeans{0.0f});   // a field added later (below)
//     }
//   };
//   attrs = io::write_fields(config);                      // every field
//   config = io::read_fields<FooConfig>(attrs, "m.h5");     // strict, then validated
//
// Written as: int64_t as int64; float as the float64 of its shortest decimal (0.1f as 0.1, not
// 0.10000000149011612); bool as int64 0/1; a string as itself; an enumeration as its name. Read
// through ConfigReader: a missing attribute, another type, an unknown name or a failed validate()
// is a FormatError naming the file and the attribute. A field added after files were written is
// listed with AbsentMeans{x}: a file without it reads as x, the value that reproduces what those
// files' models did, so that they still load.
#pragma once
#include <charconv>
#include <map>
#include <string>

#include "attn/io/config_reader.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::io {

// The value of a field that a file written before the field existed stands for.
template <class T>
struct AbsentMeans {
  T value;
};
// AbsentMeans{0.0f}: clang before 17 does not deduce an aggregate's template arguments.
template <class T>
AbsentMeans(T) -> AbsentMeans<T>;

struct FieldWriter {
  std::map<std::string, AttrValue> attrs;
  void operator()(const char* key, const int64_t& x) { attrs[key] = x; }
  void operator()(const char* key, const bool& x) { attrs[key] = int64_t{x ? 1 : 0}; }
  void operator()(const char* key, const std::string& x) { attrs[key] = x; }
  void operator()(const char* key, const float& x) {
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof buf, x);
    attrs[key] = std::stod(std::string(buf, res.ptr));
  }
  template <class Enum, class Name, class Parse>
  void operator()(const char* key, const Enum& x, Name name, Parse) {
    attrs[key] = std::string(name(x));
  }
  template <class T>
  void operator()(const char* key, const T& x, AbsentMeans<T>) {
    (*this)(key, x);
  }
  template <class Enum, class Name, class Parse>
  void operator()(const char* key, const Enum& x, Name name, Parse parse, AbsentMeans<Enum>) {
    (*this)(key, x, name, parse);
  }
};

struct FieldReader {
  const ConfigReader& r;
  void operator()(const char* key, int64_t& x) const { x = r.integer(key); }
  void operator()(const char* key, bool& x) const { x = r.flag(key); }
  void operator()(const char* key, std::string& x) const { x = r.text(key); }
  void operator()(const char* key, float& x) const { x = static_cast<float>(r.real(key)); }
  template <class Enum, class Name, class Parse>
  void operator()(const char* key, Enum& x, Name, Parse parse) const {
    x = r.parsed(key, parse);
  }
  template <class T>
  void operator()(const char* key, T& x, AbsentMeans<T> absent) const {
    if (r.has(key)) (*this)(key, x);
    else x = absent.value;
  }
  template <class Enum, class Name, class Parse>
  void operator()(const char* key, Enum& x, Name name, Parse parse, AbsentMeans<Enum> absent) const {
    if (r.has(key))
      (*this)(key, x, name, parse);
    else
      x = absent.value;
  }
};

template <class Config>
std::map<std::string, AttrValue> write_fields(const Config& config) {
  FieldWriter w;
  Config::fields(config, w);
  return std::move(w.attrs);
}

template <class Config>
Config read_fields(const std::map<std::string, AttrValue>& attrs, const std::string& source) {
  const ConfigReader r(attrs, source);
  FieldReader v{r};
  Config c;
  Config::fields(c, v);
  r.validated(c);
  return c;
}

}  // namespace attn::io

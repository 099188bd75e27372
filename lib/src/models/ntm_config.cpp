// NtmConfig: names of the enumerations, range checks and the /config attributes.
#include <string>

#include "attn/models/ntm.hpp"

namespace attn::models {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError("ntm config: " + message);
}

std::string got(int64_t v) { return ", got " + std::to_string(v); }

}  // namespace

NtmController parse_ntm_controller(const std::string& name) {
  if (name == "lstm") return NtmController::lstm;
  if (name == "feedforward") return NtmController::feedforward;
  throw ConfigError("unknown controller '" + name + "' (expected lstm or feedforward)");
}
const char* ntm_controller_name(NtmController controller) {
  return controller == NtmController::lstm ? "lstm" : "feedforward";
}

NtmMemoryInit parse_ntm_memory_init(const std::string& name) {
  if (name == "constant") return NtmMemoryInit::constant;
  if (name == "learned") return NtmMemoryInit::learned;
  if (name == "random") return NtmMemoryInit::random;
  throw ConfigError("unknown memory_init '" + name + "' (expected constant, learned or random)");
}
const char* ntm_memory_init_name(NtmMemoryInit init) {
  switch (init) {
    case NtmMemoryInit::constant: return "constant";
    case NtmMemoryInit::learned: return "learned";
    case NtmMemoryInit::random: return "random";
  }
  return "?";
}

void NtmConfig::validate() const {
  require(input_size >= 1, "input_size must be >= 1" + got(input_size));
  require(output_size >= 1, "output_size must be >= 1" + got(output_size));
  require(controller_size >= 1, "controller_size must be >= 1" + got(controller_size));
  require(controller_layers >= 1, "controller_layers must be >= 1" + got(controller_layers));
  require(memory_rows >= 1, "memory_rows must be >= 1" + got(memory_rows));
  require(memory_width >= 1, "memory_width must be >= 1" + got(memory_width));
  require(read_heads >= 0, "read_heads must be >= 0" + got(read_heads));
  require(write_heads >= 0, "write_heads must be >= 0" + got(write_heads));
  require(shift_range >= 0, "shift_range must be >= 0" + got(shift_range));
  // Shifts of N or more rows repeat smaller ones (they wrap around the memory).
  require(shift_range < memory_rows, "shift_range must be < memory_rows (" + std::to_string(memory_rows) + ")" +
                                         got(shift_range));
}

std::map<std::string, io::AttrValue> NtmConfig::to_attrs() const {
  return {{"input_size", input_size},
          {"output_size", output_size},
          {"controller", std::string(ntm_controller_name(controller))},
          {"controller_size", controller_size},
          {"controller_layers", controller_layers},
          {"memory_rows", memory_rows},
          {"memory_width", memory_width},
          {"read_heads", read_heads},
          {"write_heads", write_heads},
          {"shift_range", shift_range},
          {"memory_init", std::string(ntm_memory_init_name(memory_init))}};
}

NtmConfig NtmConfig::from_attrs(const std::map<std::string, io::AttrValue>& attrs) {
  NtmConfig c;
  auto get = [&](const std::string& key) -> const io::AttrValue* {
    auto it = attrs.find(key);
    return it == attrs.end() ? nullptr : &it->second;
  };
  auto type_error = [](const std::string& key, const char* want) {
    return ConfigError("ntm config: attribute '" + key + "' must be " + want);
  };
  auto int_of = [&](const std::string& key, int64_t& out) {
    if (const io::AttrValue* v = get(key)) {
      if (const int64_t* i = std::get_if<int64_t>(v)) out = *i;
      else throw type_error(key, "an integer");
    }
  };
  auto string_of = [&](const std::string& key, auto parse, auto& out) {
    if (const io::AttrValue* v = get(key)) {
      if (const std::string* s = std::get_if<std::string>(v)) out = parse(*s);
      else throw type_error(key, "a string");
    }
  };
  int_of("input_size", c.input_size);
  int_of("output_size", c.output_size);
  string_of("controller", parse_ntm_controller, c.controller);
  int_of("controller_size", c.controller_size);
  int_of("controller_layers", c.controller_layers);
  int_of("memory_rows", c.memory_rows);
  int_of("memory_width", c.memory_width);
  int_of("read_heads", c.read_heads);
  int_of("write_heads", c.write_heads);
  int_of("shift_range", c.shift_range);
  string_of("memory_init", parse_ntm_memory_init, c.memory_init);
  c.validate();
  return c;
}

}  // namespace attn::models

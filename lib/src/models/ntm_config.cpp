// NtmConfig: names of the enumerations, range checks and the /config attributes.
#include <string>

#include "attn/core/enum_names.hpp"
#include "attn/io/config_fields.hpp"
#include "attn/models/ntm.hpp"

namespace attn::models {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError("ntm config: " + message);
}

std::string got(int64_t v) { return ", got " + std::to_string(v); }

}  // namespace

namespace {
constexpr EnumNames<NtmController, 2> kControllerNames{
    {{NtmController::lstm, "lstm"}, {NtmController::feedforward, "ff"}}};
constexpr EnumNames<NtmMemoryInit, 3> kMemoryInitNames{
    {{NtmMemoryInit::constant, "constant"}, {NtmMemoryInit::learned, "learned"}, {NtmMemoryInit::random, "random"}}};
}  // namespace

NtmController parse_ntm_controller(const std::string& name) { return parse_enum(kControllerNames, "controller", name); }
const char* ntm_controller_name(NtmController controller) { return enum_name(kControllerNames, controller); }
NtmMemoryInit parse_ntm_memory_init(const std::string& name) {
  return parse_enum(kMemoryInitNames, "memory_init", name);
}
const char* ntm_memory_init_name(NtmMemoryInit init) { return enum_name(kMemoryInitNames, init); }


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
  // Shifts of Nm or more rows repeat smaller ones (they wrap around the memory).
  require(shift_range < memory_rows, "shift_range must be < memory_rows (" + std::to_string(memory_rows) + ")" +
                                         got(shift_range));
}

std::map<std::string, io::AttrValue> NtmConfig::to_attrs() const { return io::write_fields(*this); }

NtmConfig NtmConfig::from_attrs(const std::map<std::string, io::AttrValue>& attrs, const std::string& source) {
  return io::read_fields<NtmConfig>(attrs, source);
}

}  // namespace attn::models

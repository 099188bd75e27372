// NtmConfig: names of the enumerations, range checks and the /config attributes.
#include <string>

#include "attn/core/enum_names.hpp"
#include "attn/families/ntm/model.hpp"
#include "attn/io/config_fields.hpp"
#include "attn/io/config_limits.hpp"

namespace attn::ntm {
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
  io::check_range("ntm", "input_size", input_size, 1, io::kMaxWidth);
  io::check_range("ntm", "output_size", output_size, 1, io::kMaxWidth);
  io::check_range("ntm", "controller_size", controller_size, 1, io::kMaxWidth);
  io::check_range("ntm", "controller_layers", controller_layers, 1, io::kMaxCount);
  io::check_range("ntm", "memory_rows", memory_rows, 1, io::kMaxLength);
  io::check_range("ntm", "memory_width", memory_width, 1, io::kMaxWidth);
  io::check_range("ntm", "read_heads", read_heads, 0, io::kMaxCount);
  io::check_range("ntm", "write_heads", write_heads, 0, io::kMaxCount);
  io::check_range("ntm", "shift_range", shift_range, 0, io::kMaxLength);
  // Shifts of Nm or more rows repeat smaller ones (they wrap around the memory).
  io::check_config(
      "ntm", shift_range < memory_rows,
      "shift_range must be < memory_rows (" + std::to_string(memory_rows) + "), got " + std::to_string(shift_range));
}

std::map<std::string, io::AttrValue> NtmConfig::to_attrs() const { return io::write_fields(*this); }

NtmConfig NtmConfig::from_attrs(const std::map<std::string, io::AttrValue>& attrs, const std::string& source) {
  return io::read_fields<NtmConfig>(attrs, source);
}

}  // namespace attn::ntm

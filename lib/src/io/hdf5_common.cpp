// The helpers every part of attn::io::File uses: HDF5's error printing switched off and its
// error stack read back as message text, object path names, UTF-8 checks, and the names of
// HDF5 types for messages. Declared in hdf5_impl.hpp, which lists what each hdf5_*.cpp owns.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/memory.hpp"
#include "hdf5_impl.hpp"

namespace attn::io::detail {
namespace {

// The innermost message on HDF5's error stack (the most specific one), then clears the stack.
std::string hdf5_detail() {
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* err, void* data) -> herr_t {
        if (n == 0 && err->desc) *static_cast<std::string*>(data) = err->desc;
        return 0;
      },
      &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Handles and errors

void quiet_hdf5() {
  thread_local const bool done = [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

H5Id compact_creation(hid_t plist_class) {
  H5Id plist(H5Pcreate(plist_class), H5Pclose);
  // Up to 65535 links or attributes in the header (HDF5's limit for compact storage); the
  // object header grows by continuation chunks, each checksummed.
  constexpr unsigned kMost = 65535;
  if (plist_class != H5P_DATASET_CREATE) H5Pset_link_phase_change(plist.get(), kMost, kMost);
  H5Pset_attr_phase_change(plist.get(), kMost, kMost);
  return plist;
}

std::string with_detail() {
  const std::string d = hdf5_detail();
  if (d.empty()) return {};
  // A checksum that does not match (metadata, or a chunk's Fletcher-32) is damage, said plainly.
  if (d.find("checksum") != std::string::npos) return " (the file is damaged: " + d + ")";
  return " (" + d + ")";
}

std::string join(const std::vector<std::string>& items, size_t limit) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < limit; ++i) s += (i ? ", " : "") + items[i];
  if (items.size() > limit) s += ", ... (" + std::to_string(items.size() - limit) + " more)";
  return s;
}

std::string normalize(const std::string& name) {
  std::string out = "/";
  for (char c : name) {
    if (c == '/' && out.back() == '/') continue;
    out += c;
  }
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string child_path(const std::string& group, const std::string& child) {
  return group == "/" ? "/" + child : group + "/" + child;
}

bool valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned c = *p++;
    int more;
    if (c == 0) return false;
    if (c < 0x80) continue;
    if (c >= 0xC2 && c <= 0xDF) more = 1;
    else if (c >= 0xE0 && c <= 0xEF) more = 2;
    else if (c >= 0xF0 && c <= 0xF4) more = 3;
    else return false;
    if (end - p < more) return false;
    for (int i = 0; i < more; ++i)
      if ((p[i] & 0xC0) != 0x80) return false;
    p += more;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Types

std::string type_name_of(hid_t type) {
  const size_t bytes = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * bytes);
    case H5T_FLOAT: return "float" + std::to_string(8 * bytes);
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_OPAQUE: return "opaque";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "variable-length";
    case H5T_REFERENCE: return "reference";
    case H5T_BITFIELD: return "bitfield";
    case H5T_TIME: return "time";
    default: return "unknown";
  }
}

std::string holds(hid_t type) {
  const std::string name = type_name_of(type);
  return name == "string" ? "strings" : name + " values";
}

H5Id fixed_utf8_type(size_t bytes) {
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<size_t>(bytes, 1));
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

std::vector<std::string> split_fixed(const std::vector<char>& buffer, size_t n, size_t bytes, bool space_pad) {
  std::vector<std::string> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string s(buffer.data() + i * bytes, bytes);
    s.resize(std::min(s.find('\0'), s.size()));
    if (space_pad) s.erase(s.find_last_not_of(' ') + 1);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<char> string_buffer(size_t n, size_t bytes, const std::string& label, const std::string& what) {
  const MemoryScope scope = MemoryScope::input(label + "'s " + what);
  const size_t total = bytes != 0 && n > SIZE_MAX / bytes ? SIZE_MAX : n * bytes;
  if (!try_reserve_memory(total)) throw_out_of_memory(total, "strings of " + std::to_string(bytes) + " bytes each");
  release_memory(total);   // counted only to be refused; the buffer is short-lived
  return std::vector<char>(total);
}

H5Id vlen_utf8_type() {
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

}  // namespace attn::io::detail

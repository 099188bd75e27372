// Attributes of an attn::io::File: scalar strings, integers and reals on any group or dataset
// (the group is created when missing), read back with range checks and with messages that list
// the attributes an object does have; and the root attributes every attnlab file carries
// (format, format_version, kind, created_by, command), with the check a reader makes of them.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "hdf5_impl.hpp"

namespace attn::io {
using detail::H5Id;
using detail::holds;
using detail::join;
using detail::normalize;
using detail::type_name_of;
using detail::valid_utf8;
using detail::with_detail;

// ---------------------------------------------------------------------------------------------
// Reading and writing one attribute (File::Impl)

H5Id File::Impl::open_attr(const std::string& object, const std::string& key) const {
  const std::string path = normalize(object);
  if (kind(path) == H5I_BADID) throw_missing("group or dataset", path);
  if (H5Aexists_by_name(fid(), path.c_str(), key.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    const auto names = attr_names(path);
    throw FormatError(label + ": no attribute '" + key + "' on '" + path + "' (" +
                      (names.empty() ? "it has no attributes" : "found: " + join(names)) + ")");
  }
  H5Id attr(H5Aopen_by_name(fid(), path.c_str(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid())
    throw IoError(label + ": cannot open attribute '" + key + "' of '" + path + "'" + with_detail());
  return attr;
}

std::vector<std::string> File::Impl::attr_names(const std::string& path) const {
  std::vector<std::string> names;
  H5Id obj(H5Oopen(fid(), path.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.valid()) throw IoError(label + ": cannot open '" + path + "'" + with_detail());
  hsize_t idx = 0;
  const herr_t status = H5Aiterate2(
      obj.get(), H5_INDEX_NAME, H5_ITER_INC, &idx,
      [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
        static_cast<std::vector<std::string>*>(data)->push_back(name);
        return 0;
      },
      &names);
  if (status < 0) throw IoError(label + ": cannot list attributes of '" + path + "'" + with_detail());
  std::sort(names.begin(), names.end());
  return names;
}

std::string File::Impl::attr_what(const std::string& object, const std::string& key) const {
  return "attribute '" + key + "' of '" + normalize(object) + "'";
}

hssize_t File::Impl::attr_count(hid_t attr, const std::string& what, bool scalar) const {
  H5Id space(H5Aget_space(attr), H5Sclose);
  const Shape shape = space_shape(space.get(), what);
  const int64_t n = numel(shape);
  if (scalar && n != 1)
    throw ShapeError(label + ": " + what + " has shape " + to_string(shape) + ", expected a scalar");
  return n;
}

std::vector<std::string> File::Impl::read_attr_strings(hid_t attr, const std::string& what,
                                                       bool scalar) const {
  H5Id type(H5Aget_type(attr), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw FormatError(label + ": " + what + " holds " + holds(type.get()) + ", expected a string");
  const auto n = static_cast<size_t>(attr_count(attr, what, scalar));
  std::vector<std::string> out;
  if (H5Tis_variable_str(type.get()) > 0) {
    const int cset = H5Tget_cset(type.get());
    out = detail::read_vlen_isolated(label, what, n, [&](hid_t mem, char** ptrs) {
      H5Tset_cset(mem, static_cast<H5T_cset_t>(cset));
      return H5Aread(attr, mem, ptrs) >= 0;
    });
  } else {
    const size_t size = H5Tget_size(type.get());
    std::vector<char> buf = detail::string_buffer(n, size, label, what);
    H5Id mem(H5Tcopy(type.get()), H5Tclose);
    if (H5Aread(attr, mem.get(), buf.data()) < 0)
      throw IoError(label + ": cannot read " + what + with_detail());
    out = detail::split_fixed(buf, n, size, H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD);
  }
  // Checked here, on reading, so that a bad string is blamed on this file and not on the output
  // it would later be copied into (set_attr refuses it there).
  for (const std::string& v : out)
    if (!valid_utf8(v)) throw DataError(label + ": " + what + ": the value is not valid UTF-8 (or contains a NUL byte)");
  return out;
}

template <class T>
std::vector<T> File::Impl::read_attr_numbers(hid_t attr, const std::string& what,
                                             bool scalar) const {
  H5Id type(H5Aget_type(attr), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  const bool want_real = std::is_floating_point_v<T>;
  if (cls != H5T_INTEGER && !(want_real && cls == H5T_FLOAT))
    throw FormatError(label + ": " + what + " holds " + holds(type.get()) + ", expected " +
                      (want_real ? "a number" : "an integer"));
  const auto n = static_cast<size_t>(attr_count(attr, what, scalar));
  std::vector<T> out(n);
  if constexpr (std::is_integral_v<T>) {
    // H5Aread clips silently, so read with the stored sign and range-check here.
    const bool is_signed = H5Tget_sign(type.get()) != H5T_SGN_NONE;
    std::vector<int64_t> s(is_signed ? n : 0);
    std::vector<uint64_t> u(is_signed ? 0 : n);
    const herr_t status = is_signed ? H5Aread(attr, H5T_NATIVE_INT64, s.data())
                                    : H5Aread(attr, H5T_NATIVE_UINT64, u.data());
    if (status < 0) throw IoError(label + ": cannot read " + what + with_detail());
    for (size_t i = 0; i < n; ++i) {
      const bool fits = is_signed ? (std::is_signed_v<T> || s[i] >= 0)
                                  : u[i] <= static_cast<uint64_t>(std::numeric_limits<T>::max());
      if (!fits)
        throw DataError(label + ": " + what + " is " +
                        (is_signed ? std::to_string(s[i]) : std::to_string(u[i])) +
                        ", which does not fit " + (std::is_signed_v<T> ? "int64" : "uint64"));
      out[i] = is_signed ? static_cast<T>(s[i]) : static_cast<T>(u[i]);
    }
    return out;
  }
  if (H5Aread(attr, H5T_NATIVE_DOUBLE, out.data()) < 0)
    throw IoError(label + ": cannot read " + what + with_detail());
  return out;
}

void File::Impl::write_attr(const std::string& object, const std::string& key, hid_t file_type,
                            hid_t memory_type, const void* value) {
  const std::string path = normalize(object);
  require_writable("attribute '" + key + "' of '" + path + "'");
  if (key.empty()) throw Error(label + ": empty attribute name on '" + path + "'");
  make_groups(path);
  if (H5Aexists_by_name(fid(), path.c_str(), key.c_str(), H5P_DEFAULT) > 0 &&
      H5Adelete_by_name(fid(), path.c_str(), key.c_str(), H5P_DEFAULT) < 0)
    throw IoError(label + ": cannot replace attribute '" + key + "' of '" + path + "'" + with_detail());
  H5Id space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Id attr(H5Acreate_by_name(fid(), path.c_str(), key.c_str(), file_type, space.get(),
                              H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), memory_type, value) < 0)
    throw IoError(label + ": cannot write attribute '" + key + "' of '" + path + "'" + with_detail());
}

// ---------------------------------------------------------------------------------------------
// Attributes

bool File::has_attr(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  const std::string path = normalize(object);
  if (m.kind(path) == H5I_BADID) return false;
  const htri_t found = H5Aexists_by_name(m.fid(), path.c_str(), key.c_str(), H5P_DEFAULT);
  if (found < 0) H5Eclear2(H5E_DEFAULT);
  return found > 0;
}

std::vector<std::string> File::attr_names(const std::string& object) const {
  const Impl& m = impl();
  const std::string path = normalize(object);
  if (m.kind(path) == H5I_BADID) m.throw_missing("group or dataset", path);
  return m.attr_names(path);
}

std::string File::attr_string(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  return m.read_attr_strings(a.get(), m.attr_what(object, key), /*scalar=*/true).front();
}

int64_t File::attr_int(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  return m.read_attr_numbers<int64_t>(a.get(), m.attr_what(object, key), /*scalar=*/true).front();
}

uint64_t File::attr_uint(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  return m.read_attr_numbers<uint64_t>(a.get(), m.attr_what(object, key), /*scalar=*/true).front();
}

double File::attr_double(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  return m.read_attr_numbers<double>(a.get(), m.attr_what(object, key), /*scalar=*/true).front();
}

AttrValue File::attr(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  H5Id type(H5Aget_type(a.get()), H5Tclose);
  const std::string what = m.attr_what(object, key);
  switch (H5Tget_class(type.get())) {
    case H5T_STRING: return m.read_attr_strings(a.get(), what, true).front();
    case H5T_INTEGER: return m.read_attr_numbers<int64_t>(a.get(), what, true).front();
    case H5T_FLOAT: return m.read_attr_numbers<double>(a.get(), what, true).front();
    default:
      throw FormatError(m.label + ": " + what + " holds " + holds(type.get()) +
                        ", expected a string, an integer or a number");
  }
}

namespace {
std::string shortest(double v) {   // the shortest text that reads back as exactly v
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  return std::string(buf, res.ptr);
}
}  // namespace

std::string File::attr_text(const std::string& object, const std::string& key) const {
  const Impl& m = impl();
  H5Id a = m.open_attr(object, key);
  H5Id type(H5Aget_type(a.get()), H5Tclose);
  const std::string what = m.attr_what(object, key);
  std::vector<std::string> items;
  switch (H5Tget_class(type.get())) {
    case H5T_STRING: items = m.read_attr_strings(a.get(), what, false); break;
    case H5T_INTEGER:
      if (H5Tget_sign(type.get()) == H5T_SGN_NONE)
        for (uint64_t v : m.read_attr_numbers<uint64_t>(a.get(), what, false)) items.push_back(std::to_string(v));
      else
        for (int64_t v : m.read_attr_numbers<int64_t>(a.get(), what, false)) items.push_back(std::to_string(v));
      break;
    case H5T_FLOAT:
      for (double v : m.read_attr_numbers<double>(a.get(), what, false)) items.push_back(shortest(v));
      break;
    // append, not "<" + string: GCC 12 warns (-Wrestrict, a false positive, GCC bug 105329)
    // on prepending to a string returned from another file.
    default: return std::string("<").append(type_name_of(type.get())).append(">");
  }
  H5Id space(H5Aget_space(a.get()), H5Sclose);
  if (H5Sget_simple_extent_type(space.get()) == H5S_SCALAR && items.size() == 1) return items.front();
  return std::string("[").append(join(items, items.size())).append("]");
}

void File::set_attr(const std::string& object, const std::string& key, const std::string& value) {
  Impl& m = impl();
  if (!valid_utf8(value))
    throw DataError(m.label + ": " + m.attr_what(object, key) +
                    ": the value is not valid UTF-8 (or contains a NUL byte)");
  H5Id type = detail::fixed_utf8_type(value.size());
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  m.write_attr(object, key, type.get(), type.get(), padded.data());
}

void File::set_attr(const std::string& object, const std::string& key, const char* value) {
  set_attr(object, key, std::string(value ? value : ""));
}

void File::set_attr(const std::string& object, const std::string& key, int value) {
  set_attr(object, key, static_cast<int64_t>(value));
}

void File::set_attr(const std::string& object, const std::string& key, int64_t value) {
  impl().write_attr(object, key, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void File::set_attr(const std::string& object, const std::string& key, uint64_t value) {
  impl().write_attr(object, key, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

void File::set_attr(const std::string& object, const std::string& key, double value) {
  impl().write_attr(object, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

void File::set_attr(const std::string& object, const std::string& key, const AttrValue& value) {
  std::visit([&](const auto& v) { set_attr(object, key, v); }, value);
}

// ---------------------------------------------------------------------------------------------
// Root attributes

void write_file_info(File& file, const FileInfo& info) {
  file.set_attr("/", "format", info.format);
  file.set_attr("/", "format_version", info.format_version);
  file.set_attr("/", "kind", info.kind);
  file.set_attr("/", "created_by", info.created_by);
  file.set_attr("/", "command", info.command);
}

FileInfo read_file_info(const File& file) {
  if (!file.has_attr("/", "format"))
    throw FormatError(file.display_name() + ": not an attnlab file (no root attribute 'format')");
  FileInfo info;
  info.format = file.attr_string("/", "format");
  if (file.has_attr("/", "format_version")) info.format_version = file.attr_int("/", "format_version");
  if (file.has_attr("/", "kind")) info.kind = file.attr_string("/", "kind");
  if (file.has_attr("/", "created_by")) info.created_by = file.attr_string("/", "created_by");
  if (file.has_attr("/", "command")) info.command = file.attr_string("/", "command");
  return info;
}

void require_format(const File& file, const std::string& format, const std::string& kind) {
  const std::string& label = file.display_name();
  if (!file.has_attr("/", "format"))
    throw FormatError(label + ": not an attnlab file (no root attribute 'format'), expected format '" +
                      format + "'");
  const FileInfo info = read_file_info(file);
  if (info.format != format)
    throw FormatError(label + ": format is '" + info.format + "', expected '" + format + "'");
  if (info.format_version > kFormatVersion)
    throw FormatError(label + ": format version " + std::to_string(info.format_version) +
                      " is newer than this build reads (" + std::to_string(kFormatVersion) +
                      "); update attnlab");
  if (info.format_version < 1)
    throw FormatError(label + ": format version " + std::to_string(info.format_version) + ", expected 1 to " +
                      std::to_string(kFormatVersion));
  if (!kind.empty() && info.kind != kind)
    throw FormatError(label + ": kind is '" + info.kind + "', expected '" + kind + "'");
}

File open_dataset(const std::string& path) {
  File file = File::open_read(path);
  if (file.has_attr("/", "format")) require_format(file, "attnlab/dataset");
  return file;
}

}  // namespace attn::io

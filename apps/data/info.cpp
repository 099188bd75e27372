// attn-data info --data FILE: a readable summary of any HDF5 file, attnlab or not — the root
// attributes (format, kind, command ...), then every group's attributes and every dataset with
// its dtype and shape, in path order. A model file is also read by its family's loader (the
// registry, attn/families/registry.hpp), which says whether its tools can use it. "-" reads the
// file image from standard input, so the tool ends a pipe: `attn-data copy --n 4 --out - |
// attn-data info --data -`.
#include <algorithm>
#include <iostream>
#include <sstream>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/families/registry.hpp"
#include "attn/io/hdf5_file.hpp"
#include "verbs.hpp"

namespace attn::data_tool {
namespace {

// One name in the file: a group, or a dataset with its stored type and shape.
struct Entry {
  std::string path;
  bool is_group = false;
  std::string type;                    // "float32", "int32", "uint8", "string", ...
  Shape shape;
  std::vector<std::string> preview;    // the first values of a string dataset
};

Entry describe(const io::File& file, const std::string& path) {
  Entry e;
  e.path = path;
  e.is_group = file.is_group(path);
  if (e.is_group) return e;
  e.type = file.type_name(path);
  e.shape = file.shape(path);
  if (e.type == "string") {
    const std::vector<std::string> values = file.read_strings(path);
    for (size_t i = 0; i < values.size() && i < 8; ++i) e.preview.push_back(values[i]);
  }
  return e;
}

void walk(const io::File& file, const std::string& group, std::vector<Entry>& out) {
  for (const std::string& name : file.list(group)) {
    const std::string path = (group == "/" ? "/" : group + "/") + name;
    Entry e = describe(file, path);
    const bool is_group = e.is_group;
    out.push_back(std::move(e));
    if (is_group) walk(file, path, out);
  }
}

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

// "  key = value" for every attribute of `object`, keys aligned.
void print_attrs(std::ostream& os, const io::File& file, const std::string& object,
                 const std::vector<std::string>& skip = {}) {
  std::vector<std::string> keys;
  for (const std::string& k : file.attr_names(object))
    if (std::find(skip.begin(), skip.end(), k) == skip.end()) keys.push_back(k);
  size_t width = 0;
  for (const std::string& k : keys) width = std::max(width, k.size());
  for (const std::string& k : keys)
    os << "  " << k << std::string(width - k.size(), ' ') << " = " << file.attr_text(object, k) << "\n";
}

// "  family  ntm (attn-ntm): reads it" for a model file, or why the family's loader refuses it.
void print_family(std::ostream& os, const io::File& file, const std::string& path) {
  if (!file.has_attr("/", "format") || file.attr_text("/", "format") != "attnlab/model" || !file.has_attr("/", "kind"))
    return;
  const families::Family* family = families::of_model_kind(file.attr_text("/", "kind"));
  if (family == nullptr) {
    os << "  family         none of this build's families writes this kind\n";
    return;
  }
  os << "  family         " << family->name << " (" << family->tool() << "): ";
  if (path == "-") {   // the image is read already; the loaders read files
    os << "not checked for standard input\n";
    return;
  }
  try {
    family->load_model(path);
    os << "reads it\n";
  } catch (const Error& e) {
    os << "refuses it: " << e.what() << "\n";
  }
}

}  // namespace

int cmd_info(int argc, char** argv) {
  cli::Options opts(kTool, "--data FILE",
                    "Prints a summary of an HDF5 file: the attnlab root attributes (format, kind,\n"
                    "created_by, command), whether the family of a model file reads it, then every\n"
                    "group's attributes and every dataset with its dtype and shape.");
  opts.data("the HDF5 file to describe").no_config_echo();
  if (!opts.parse(argc, argv)) return 0;

  const io::File file = io::File::open_read(opts.get<std::string>("data"));
  std::ostringstream os;   // printed whole at the end: a read error leaves no half summary

  const std::vector<std::string> standard = {"format", "format_version", "kind", "created_by", "command"};
  os << file.display_name() << "\n";
  if (!file.has_attr("/", "format"))
    os << "  not an attnlab file (no root attribute 'format')\n";
  for (const std::string& key : standard)
    if (file.has_attr("/", key))
      os << "  " << key << std::string(15 - key.size(), ' ') << file.attr_text("/", key) << "\n";
  print_attrs(os, file, "/", standard);
  print_family(os, file, opts.get<std::string>("data"));

  std::vector<Entry> entries;
  walk(file, "/", entries);
  size_t path_width = 0;
  for (const Entry& e : entries)
    if (!e.is_group) path_width = std::max(path_width, e.path.size());
  for (const Entry& e : entries) {
    const bool has_attrs = !file.attr_names(e.path).empty();
    if (e.is_group) {   // datasets carry their group in their path: show only what else there is
      const bool empty = file.list(e.path).empty();
      if (has_attrs || empty) {
        os << e.path << (empty && !has_attrs ? "  (empty group)" : "") << "\n";
        print_attrs(os, file, e.path);
      }
      continue;
    }
    os << e.path << std::string(path_width - e.path.size() + 2, ' ') << e.type
       << std::string(9 - std::min<size_t>(e.type.size(), 8), ' ') << to_string(e.shape);
    if (!e.preview.empty()) {
      os << " ";
      for (const std::string& s : e.preview) os << " " << quoted(s);
      if (!e.shape.empty() && e.shape[0] > static_cast<int64_t>(e.preview.size())) os << " ...";
    }
    os << "\n";
    if (has_attrs) print_attrs(os, file, e.path);
  }
  std::cout << os.str() << std::flush;
  return 0;
}

}  // namespace attn::data_tool

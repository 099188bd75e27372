// Valid files changed the way a careless user or another program changes them, through HDF5 so
// that every checksum holds and the readers' own checks are all that stands between the change
// and a crash or a wrong answer: an element set to an extreme value (NaN, Inf, -1, 0, 2^31-1, a
// length longer than its row), a dataset cut or grown by rows, dropped, or stored as the other
// number type, an attribute set to another value or type, or dropped; a vocabulary entry emptied
// or repeated. The byte mutations of the other harnesses mostly break a checksum and stop at the
// first check; these reach the data set readers' and model loaders' validation.
// The originals are the seeds of data_sets and model_files (tests/fuzz/seeds.sh), from the
// folder ATTN_FUZZ_SEEDS; the input's first byte picks one, the rest are edits of 4 bytes each.
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/io/hdf5_file.hpp"
#include "fuzz_support.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

// A file's content, as the edits see it.
struct Content {
  bool model = false;    // a model file (load_model), else a data set (read_data_set)
  int reader = 0;        // its reader or family
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::vector<std::string>> strings;
  std::map<std::pair<std::string, std::string>, io::AttrValue> attrs;   // (object, key) -> value
};

void collect_attrs(const io::File& f, const std::string& object, Content& c) {
  for (const std::string& key : f.attr_names(object)) {
    try {
      c.attrs[{object, key}] = f.attr(object, key);
    } catch (const Error&) {   // an array attribute: not edited, not copied
    }
  }
}

// The attributes of `group` and of every group below it, those that hold no dataset too: a model
// file's /config, /state and /trained_on, without which every model file stopped at its first check.
void collect_group_attrs(const io::File& f, const std::string& group, Content& c) {
  collect_attrs(f, group, c);
  for (const std::string& name : f.list(group)) {
    const std::string path = (group == "/" ? "" : group) + "/" + name;
    if (f.is_group(path)) collect_group_attrs(f, path, c);
  }
}

Content load(const fs::path& seed, bool model) {
  std::ifstream in(seed, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Content c;
  c.model = model;
  c.reader = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]);
  bytes.erase(bytes.begin());
  const io::File f = io::File::open_image(std::move(bytes), seed.string());
  collect_group_attrs(f, "/", c);
  for (const std::string& rel : f.list_datasets("/")) {
    const std::string path = "/" + rel;
    if (f.type_name(path) == "string") c.strings[path] = f.read_strings(path);
    else c.tensors[path] = f.read(path);
    collect_attrs(f, path, c);
  }
  return c;
}

std::vector<Content>& originals() {
  static std::vector<Content> all = [] {
    std::vector<Content> out;
    const char* dir = std::getenv("ATTN_FUZZ_SEEDS");
    if (dir == nullptr) {
      std::fprintf(stderr, "fuzz_semantic: set ATTN_FUZZ_SEEDS to the folder tests/fuzz/seeds.sh made\n");
      std::exit(2);
    }
    for (const auto& [sub, model] : {std::pair{"data_sets", false}, std::pair{"model_files", true}}) {
      std::vector<fs::path> seeds(fs::directory_iterator(fs::path(dir) / sub), {});
      std::sort(seeds.begin(), seeds.end());   // a first byte picks the same original on any machine
      for (const fs::path& seed : seeds) out.push_back(load(seed, model));
    }
    return out;
  }();
  return all;
}

template <class Map>
auto nth(Map& m, unsigned k) {
  auto it = m.begin();
  std::advance(it, k % m.size());
  return it;
}

float extreme_float(unsigned code) {
  const float values[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), 0.0f, -1.0f, 1e30f, -1e-30f, 3.0f};
  return values[code % 8];
}

int32_t extreme_int(unsigned code, const Tensor& t) {
  const int32_t values[] = {-1, 0, 1, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(),
                            static_cast<int32_t>(t.rank() > 1 ? t.dim(t.rank() - 1) + 1 : 2), 255, 65536};
  return values[code % 8];
}

// One edit of 4 bytes: what, which, where, the value.
void edit(Content& c, const uint8_t* e) {
  const unsigned what = e[0] % 8, which = e[1], where = e[2], value = e[3];
  if (what <= 3 && c.tensors.empty()) return;
  switch (what) {
    case 0: {   // one element set to an extreme value
      Tensor& t = nth(c.tensors, which)->second;
      if (t.numel() == 0) return;
      t = t.clone();   // copies share storage: the original must stay as it is
      const int64_t i = static_cast<int64_t>(where * 257u + value) % t.numel();
      if (t.dtype() == DType::f32) t.data()[i] = extreme_float(value);
      else t.idata()[i] = extreme_int(value, t);
      break;
    }
    case 1: {   // rows cut (or the first row repeated)
      auto it = nth(c.tensors, which);
      Tensor& t = it->second;
      if (t.rank() < 1) return;
      Shape shape = t.shape();
      const int64_t rows = where % 2 ? shape[0] + 1 : static_cast<int64_t>(value) % (shape[0] + 1);
      shape[0] = rows;
      Tensor out(shape, t.dtype());
      const int64_t row = shape[0] > 0 ? out.numel() / rows : 0;
      for (int64_t r = 0; r < rows && t.dim(0) > 0; ++r)
        for (int64_t k = 0; k < row; ++k) {
          const int64_t from = (r % t.dim(0)) * row + k;
          if (t.dtype() == DType::f32) out.data()[r * row + k] = t.data()[from];
          else out.idata()[r * row + k] = t.idata()[from];
        }
      t = out;
      break;
    }
    case 2:   // a dataset dropped
      c.tensors.erase(nth(c.tensors, which));
      break;
    case 3: {   // stored as the other number type
      Tensor& t = nth(c.tensors, which)->second;
      Tensor out(t.shape(), t.dtype() == DType::f32 ? DType::i32 : DType::f32);
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (t.dtype() == DType::f32)   // clamped: converting 1e30 to int32 is undefined
          out.idata()[i] = std::isfinite(t.data()[i]) ? static_cast<int32_t>(std::clamp(t.data()[i], -2e9f, 2e9f)) : 0;
        else out.data()[i] = static_cast<float>(t.idata()[i]) + (value % 2 ? 0.5f : 0.0f);
      }
      t = out;
      break;
    }
    case 4: case 5: {   // an attribute set to another value, or another type
      if (c.attrs.empty()) return;
      io::AttrValue& a = nth(c.attrs, which)->second;
      const int64_t ints[] = {-1, 0, 1, 1 << 30, std::numeric_limits<int64_t>::max(), 3, 1000000, -5};
      if (what == 4 && std::holds_alternative<int64_t>(a)) a = ints[value % 8];
      else if (what == 4 && std::holds_alternative<double>(a)) a = static_cast<double>(extreme_float(value));
      else if (what == 4) a = std::string(value % 2 ? "" : "bogus");
      else a = value % 3 == 0 ? io::AttrValue(std::string("7")) : value % 3 == 1 ? io::AttrValue(int64_t{7}) : io::AttrValue(7.5);
      break;
    }
    case 6:   // an attribute dropped
      if (!c.attrs.empty()) c.attrs.erase(nth(c.attrs, which));
      break;
    default: {   // a vocabulary or label entry emptied or repeated
      if (c.strings.empty()) return;
      std::vector<std::string>& v = nth(c.strings, which)->second;
      if (v.empty()) return;
      const size_t i = where % v.size();
      v[i] = value % 2 ? std::string() : v[(i + 1) % v.size()];
      break;
    }
  }
}

// Once per process. libhdf5 gives every file it opens or creates a metadata cache whose index
// (515 KiB) its free lists hand back to malloc at close, past their default 64 KiB a list:
// under ASan each file then cost a fresh mapping, zeroed and faulted in page by page, a fifth to
// a quarter of an execution's time (the same 709 inputs: 56 -> 71 executions per CPU second).
// 2 MiB a list keeps it for the next file. Only libhdf5's own blocks, not instrumented either
// way, are kept; attnlab's memory all still goes through ASan. The files here are whole, as HDF5
// sees them; the byte-level harnesses, which meet libhdf5's handling of damage, keep its defaults.
void keep_hdf5_caches() {
  static const bool done = [] {
    H5set_free_list_limits(/*reg_global_lim=*/4 << 20, /*reg_list_lim=*/2 << 20, /*arr_global_lim=*/4 << 20,
                           /*arr_list_lim=*/256 << 10, /*blk_global_lim=*/16 << 20, /*blk_list_lim=*/1 << 20);
    return true;
  }();
  (void)done;
}

// The file each input is written to and read from, removed when the process ends.
struct Scratch {
  std::string path = "/dev/shm/attnlab-fuzz-" + std::to_string(::getpid()) + ".h5";
  ~Scratch() { ::unlink(path.c_str()); }
};

void write(const Content& c, const std::string& path) {
  io::File f = io::File::create(path);
  for (const auto& [name, t] : c.tensors) f.write(name, t);
  for (const auto& [name, v] : c.strings) f.write_strings(name, v);
  for (const auto& [where, value] : c.attrs) f.set_attr(where.first, where.second, value);
  f.commit();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  keep_hdf5_caches();
  std::vector<Content>& all = originals();
  if (size == 0 || all.empty()) return 0;
  Content c = all[data[0] % all.size()];
  for (size_t at = 1; at + 4 <= size && at < 1 + 4 * 8; at += 4) edit(c, data + at);
  static const Scratch scratch;
  const std::string& path = scratch.path;
  try {
    write(c, path);
  } catch (const Error&) {   // an edit the writer refuses (an empty string in a vocabulary): not an input
    return 0;
  }
  try {
    if (c.model) fuzz::load_model(c.reader, path);
    else fuzz::read_data_set(c.reader, io::File::open_read(path));
  } catch (const Error&) {
  }
  return 0;
}

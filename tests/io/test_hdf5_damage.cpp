// Damaged files: what attnlab writes is checksummed throughout, so that a flipped bit is an error
// and never a crash or a silently different value; files of other writers (h5py's defaults,
// variable-length strings) are still read, and a damaged global heap in them costs an error,
// not the process.
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/io/hdf5_file.hpp"
#include "h5py_like.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

Tensor ramp(const Shape& shape, DType dtype = DType::f32) {
  Tensor t(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::f32) t.at(i) = 0.25f * static_cast<float>(i % 97) - 3.0f;
    else t.idata()[i] = static_cast<int32_t>(i % 200);
  }
  return t;
}

// A small file with one of each way attnlab stores things: a dataset in its object header, one in
// checksummed chunks, one compressed, uint8 storage, an empty one, strings, attributes of each type,
// and a group of more than 8 links and one of more than 8 attributes (HDF5's default would move
// those into a fractal heap without checksums, where tests/fuzz crashed libhdf5).
void write_sample(const std::string& path) {
  io::File f = io::File::create(path);
  io::write_file_info(f, {.format = "attnlab/model", .kind = "toy", .created_by = "test", .command = "test"});
  f.write("/params/small", ramp({8, 4}));
  f.write("/params/chunked", ramp({40, 128}));                             // 20 KiB: chunks
  f.write("/params/packed", ramp({64, 8}), {.compress = true, .chunk_rows = 16});
  f.write("/data/bytes", ramp({30, 7}, DType::i32), {.as_uint8 = true});
  f.write("/data/empty", Tensor({0, 5}));
  f.write_strings("/vocab/words", {"<pad>", "the", "Straße", "", "ü"});
  f.set_attr("/config", "arch", "lm");
  f.set_attr("/config", "layers", int64_t{3});
  f.set_attr("/config", "lr", 1e-3);
  f.set_attr("/config", "empty", "");
  for (int k = 0; k < 10; ++k) {
    f.write("/params/many/w" + std::to_string(k), ramp({2, 2}));
    f.set_attr("/config", "option" + std::to_string(k), int64_t{k});
  }
  f.commit();
}

// Everything in the file, as text: every dataset's bytes and every attribute of every object.
std::string contents(const io::File& f) {
  std::string out;
  auto attrs = [&](const std::string& object) {
    for (const auto& key : f.attr_names(object)) out += object + "@" + key + "=" + f.attr_text(object, key) + "\n";
  };
  attrs("/");
  for (const char* group : {"/config", "/params", "/data", "/vocab"}) {
    attrs(group);
    for (const auto& name : f.list_datasets(group)) {
      const std::string path = std::string(group) + "/" + name;
      out += path + ":" + f.type_name(path) + ":";
      if (f.type_name(path) == "string") {
        for (const auto& s : f.read_strings(path)) out += s + "|";
      } else {
        const Tensor t = f.read(path);
        const char* p = t.dtype() == DType::f32 ? reinterpret_cast<const char*>(t.data())
                                                : reinterpret_cast<const char*>(t.idata());
        out.append(p, static_cast<size_t>(t.numel()) * 4);
      }
      out += "\n";
    }
  }
  return out;
}

// The byte ranges [offset, offset + size) in the file of a chunked dataset's chunks.
std::vector<std::pair<size_t, size_t>> chunk_ranges(const std::string& path, const char* dataset) {
  std::vector<std::pair<size_t, size_t>> ranges;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(file, dataset, H5P_DEFAULT);
  const hid_t space = H5Dget_space(d);
  hsize_t chunks = 0;
  if (H5Dget_num_chunks(d, space, &chunks) < 0) chunks = 0;
  for (hsize_t k = 0; k < chunks; ++k) {
    haddr_t at = 0;
    hsize_t size = 0;
    if (H5Dget_chunk_info(d, space, k, nullptr, nullptr, &at, &size) >= 0)
      ranges.emplace_back(static_cast<size_t>(at), static_cast<size_t>(at + size));
  }
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(file);
  return ranges;
}

}  // namespace

TEST_CASE("hdf5: attnlab writes checksummed formats, fixed-length strings and checksummed chunks", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("sample.h5");
  write_sample(path);
  const std::string bytes = test::slurp(path);
  CHECK(static_cast<unsigned char>(bytes.at(8)) >= 2);   // superblock version 2+: checksummed
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  auto layout = [&](const char* name) {
    hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
    hid_t dcpl = H5Dget_create_plist(ds);
    const H5D_layout_t l = H5Pget_layout(dcpl);
    bool fletcher = false;
    for (int i = 0; i < H5Pget_nfilters(dcpl); ++i) {
      unsigned flags = 0, config = 0;
      size_t n = 0;
      if (H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &n, nullptr, 0, nullptr, &config) == H5Z_FILTER_FLETCHER32)
        fletcher = true;
    }
    H5Pclose(dcpl);
    H5Dclose(ds);
    return std::pair{l, fletcher};
  };
  CHECK(layout("/params/small") == std::pair{H5D_COMPACT, false});
  CHECK(layout("/params/chunked") == std::pair{H5D_CHUNKED, true});
  CHECK(layout("/params/packed") == std::pair{H5D_CHUNKED, true});
  hid_t ds = H5Dopen2(file, "/vocab/words", H5P_DEFAULT);
  hid_t type = H5Dget_type(ds);
  CHECK(H5Tis_variable_str(type) == 0);
  CHECK(H5Tget_size(type) == std::string("Straße").size());   // the longest, in bytes
  H5Tclose(type);
  H5Dclose(ds);
  hid_t attr = H5Aopen_by_name(file, "/", "format", H5P_DEFAULT, H5P_DEFAULT);
  hid_t atype = H5Aget_type(attr);
  CHECK(H5Tis_variable_str(atype) == 0);
  H5Tclose(atype);
  H5Aclose(attr);
  H5Fclose(file);
}

TEST_CASE("hdf5: every single-bit flip in a file attnlab wrote is refused or changes nothing", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("sample.h5"), damaged = dir.file("damaged.h5");
  write_sample(path);
  const std::string original = contents(io::File::open_read(path));
  const std::string bytes = test::slurp(path);
  // Every byte, one bit each (the bit cycles through the 8): thousands of damaged files. Three
  // quarters of the file are /params/chunked's two 16 KiB chunks (the second padded to full
  // size), where every flip meets the same Fletcher-32 check: of those only every 17th byte
  // (still every bit position in every chunk). 11,600 files, not 42,500: 47 s, not 170.
  const std::vector<std::pair<size_t, size_t>> payload = chunk_ranges(path, "/params/chunked");
  REQUIRE(payload.size() > 1);
  auto sampled_out = [&](size_t at) {
    return std::any_of(payload.begin(), payload.end(),
                       [&](const auto& r) { return at >= r.first && at < r.second && (at - r.first) % 17 != 0; });
  };
  int refused = 0, unchanged = 0, skipped = 0;
  std::vector<std::string> changed;
  for (size_t at = 0; at < bytes.size(); ++at) {
    if (sampled_out(at)) {
      ++skipped;
      continue;
    }
    std::string copy = bytes;
    copy[at] = static_cast<char>(copy[at] ^ (1 << (at % 8)));
    test::write_text(damaged, copy);
    try {
      if (contents(io::File::open_read(damaged)) == original) ++unchanged;
      else changed.push_back(std::to_string(at));
    } catch (const Error&) {   // IoError, FormatError, DataError, ShapeError, MemoryError
      ++refused;
    }
  }
  INFO(bytes.size() << " bytes, " << skipped << " of them not flipped: " << refused << " refused, " << unchanged
                     << " unchanged (bytes HDF5 does not read)");
  CHECK(skipped > static_cast<int>(bytes.size()) / 4);
  CHECK(changed == std::vector<std::string>{});
  CHECK(refused > static_cast<int>(bytes.size() - static_cast<size_t>(skipped)) / 2);
}

TEST_CASE("hdf5: a checksum that does not match says the file is damaged", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("sample.h5");
  write_sample(path);
  // The chunked dataset's floats: 0.25 * (i % 97) - 3, so the float -3.0 (0xc0400000) is in them.
  std::string bytes = test::slurp(path);
  const std::string minus_three("\x00\x00\x40\xc0", 4);
  const size_t at = bytes.find(minus_three, bytes.size() / 3);
  REQUIRE(at != std::string::npos);
  bytes[at] = '\x01';
  test::write_text(path, bytes);
  const io::File f = io::File::open_read(path);
  REQUIRE_THROWS_AS(f.read("/params/chunked"), IoError);
  REQUIRE_THROWS_WITH(f.read("/params/chunked"),
                      Contains(path + ": cannot read dataset '/params/chunked'") && Contains("the file is damaged") &&
                          Contains("checksum"));
}

TEST_CASE("hdf5: variable-length strings of other writers are read, and a damaged global heap is an error, not a crash",
          "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("h5py.h5"), damaged = dir.file("damaged.h5");
  const std::vector<std::string> words = {"<pad>", "the", "Straße", "", "ü", "a rather longer entry"};
  test::write_h5py_like_strings(path, "/vocab/src", words, "note", "from h5py");
  {
    const io::File f = io::File::open_read(path);
    CHECK(f.read_strings("/vocab/src") == words);
    CHECK(f.attr_string("/", "note") == "from h5py");
  }
  // The heap collection holding the strings ("GCOL"): every byte of it flipped, one at a time.
  const std::string bytes = test::slurp(path);
  const size_t heap = bytes.find("GCOL");
  REQUIRE(heap != std::string::npos);
  // Some flips send libhdf5 into an endless loop: the reader is given 1 s here, not 20.
  io::set_string_reader_timeout(std::chrono::seconds(1));
  int read = 0, refused = 0;
  for (size_t at = heap; at < bytes.size() && at < heap + 256; ++at) {
    std::string copy = bytes;
    copy[at] = static_cast<char>(copy[at] ^ (1 << (at % 8)));
    test::write_text(damaged, copy);
    try {
      const io::File f = io::File::open_read(damaged);
      (void)f.read_strings("/vocab/src");
      (void)f.attr_string("/", "note");
      ++read;   // without checksums a flip may pass unnoticed; what matters is that it is survived
    } catch (const Error& e) {
      ++refused;
      CHECK_THAT(std::string(e.what()), Contains(damaged));
    }
  }
  io::set_string_reader_timeout(std::chrono::milliseconds(0));
  INFO(read << " read, " << refused << " refused");
  CHECK(refused > 0);
}

TEST_CASE("hdf5: a dimension another writer's file cannot hold is refused before memory is asked for it",
          "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("h5py.h5"), damaged = dir.file("damaged.h5"), empty = dir.file("empty.h5");
  test::write_h5py_like_ints(path, "/test/src", 10, 10);
  CHECK(io::File::open_read(path).read("/test/src", DType::i32, {10, 10}).idata()[99] == 99);
  // Without checksums a flipped byte of the dataspace goes unnoticed: the second dimension, 10,
  // becomes 0xFF00000A (the byte flip that made eval allocate 17 GB before HDF5's read failed).
  std::string bytes = test::slurp(path);
  const std::string ten("\x0a\0\0\0\0\0\0\0", 8);
  const size_t dims = bytes.find(ten + ten + ten + ten);   // dimensions, then maximum dimensions
  REQUIRE(dims != std::string::npos);
  bytes[dims + 8 + 3] = '\xff';
  test::write_text(damaged, bytes);
  const io::File f = io::File::open_read(damaged);
  REQUIRE_THROWS_AS(f.read("/test/src"), DataError);
  REQUIRE_THROWS_WITH(f.read("/test/src"), Contains(damaged + ": dataset '/test/src' has shape [10, 4278190090]") &&
                                               Contains("past its maximum dimension 10"));
  REQUIRE_THROWS_AS(f.shape("/test/src"), DataError);
  // Declared but never written: 4 GB of fill values that a 2 KB file does not hold.
  test::write_h5py_like_ints(empty, "/test/src", 1000000, 1000, /*written=*/false);
  REQUIRE_THROWS_WITH(io::File::open_read(empty).read("/test/src"),
                      Contains(empty + ": dataset '/test/src' has shape [1000000, 1000], 3.73 GiB, more than the file's") &&
                          Contains("can hold"));
}

TEST_CASE("hdf5: strings that are not UTF-8 in another writer's file are refused on reading", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("vocab.h5");
  test::write_h5py_like_strings(path, "/vocab/src", {"<pad>", "bad\xff"}, "note", "bad\xfe");
  const io::File f = io::File::open_read(path);
  REQUIRE_THROWS_AS(f.read_strings("/vocab/src"), DataError);
  REQUIRE_THROWS_WITH(f.read_strings("/vocab/src"),
                      Contains(path + ": dataset '/vocab/src': string 1 is not valid UTF-8"));
  REQUIRE_THROWS_AS(f.attr_string("/", "note"), DataError);
  REQUIRE_THROWS_WITH(f.attr_string("/", "note"), Contains(path) && Contains("not valid UTF-8"));
}

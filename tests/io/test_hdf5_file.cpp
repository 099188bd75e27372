// io::File: tensors, strings, attributes, compression and row ranges, atomic writes, standard
// streams, and the messages of every failure (bad files, missing datasets, wrong dtype/shape).
#include "attn/io/hdf5_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>

#include "test_support.hpp"

using namespace attn;
using Catch::Contains;
using Catch::Equals;
using Catch::StartsWith;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<std::string> folder_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  return a.numel() == 0 || std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

// A small committed file: /train/src int32 [10, 7], /train/tgt int32 [10, 5], /x float32 [2, 3].
std::string make_fixture(const test::TempDir& dir, const std::string& name = "data.h5") {
  const std::string path = dir.file(name);
  io::File f = io::File::create(path);
  Tensor src({10, 7}, DType::i32), tgt({10, 5}, DType::i32);
  for (int64_t i = 0; i < src.numel(); ++i) src.idata()[i] = static_cast<int32_t>(i);
  f.write("/train/src", src);
  f.write("train/tgt", tgt);
  f.write("/x", Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}));
  f.commit();
  return path;
}

// Runs `body` in a forked child whose file descriptor `fd` is redirected to `path` (opened
// with `flags`); returns what the child reported: "" on success, else its failure.
std::string run_in_child(int fd, const std::string& path, int flags,
                         const std::function<std::string()>& body) {
  const std::string report = path + ".report";
  std::fflush(nullptr);   // or the child would write the parent's buffered output again
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::string result;
    try {
      const int redirected = ::open(path.c_str(), flags, 0644);
      if (redirected < 0 || ::dup2(redirected, fd) < 0) result = "cannot redirect";
      else result = body();
    } catch (const std::exception& e) {
      result = std::string("unexpected exception: ") + e.what();
    }
    std::ofstream(report) << result;
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died";
  return slurp(report);
}

}  // namespace

TEST_CASE("hdf5: float32, int32 and uint8 tensors round-trip bit for bit", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("t.h5");
  Rng rng(3);
  const Tensor x = randn({4, 3, 2}, rng);
  const Tensor ids = Tensor::from_ints({2, 3}, {0, -7, 2147483647, 4, -2147483647 - 1, 6});
  const Tensor pixels = Tensor::from_ints({2, 2}, {0, 255, 17, 128});
  const Tensor scalar = Tensor::from({}, {2.5f});
  const Tensor empty({0, 8});
  {
    io::File f = io::File::create(path);
    f.write("/a/b/x", x);
    f.write("/ids", ids);
    f.write("/img", pixels, {.as_uint8 = true});
    f.write("/scalar", scalar);
    f.write("/empty", empty);
    f.commit();
  }
  const io::File f = io::File::open_read(path);
  CHECK(f.path() == path);
  CHECK(same_bits(f.read("/a/b/x", DType::f32), x));
  CHECK(same_bits(f.read("ids", DType::i32, {2, kAny}), ids));
  CHECK(f.type_name("/img") == "uint8");
  const Tensor back = f.read("/img", DType::i32);   // uint8 comes back as int32
  CHECK(back.dtype() == DType::i32);
  CHECK(same_bits(back, pixels));
  CHECK(same_bits(f.read("/scalar"), scalar));
  CHECK(f.shape("/scalar") == Shape{});
  CHECK(f.read("/empty", DType::f32).shape() == Shape{0, 8});
  CHECK(f.read("/ids").dtype() == DType::i32);      // natural dtype
  CHECK(f.type_name("/a/b/x") == "float32");
  CHECK(f.exists("/a/b"));
  CHECK(f.is_group("a"));
  CHECK(f.is_dataset("/a/b/x"));
  CHECK_FALSE(f.exists("/a/c"));
  CHECK_FALSE(f.exists("/a/b/x/y"));
  CHECK(f.list("/") == std::vector<std::string>{"a", "empty", "ids", "img", "scalar"});
  CHECK(f.list_datasets("/") == std::vector<std::string>{"a/b/x", "empty", "ids", "img", "scalar"});
}

TEST_CASE("hdf5: uint8 storage rejects values outside 0..255 and non-int32 tensors", "[io][hdf5]") {
  test::TempDir dir;
  io::File f = io::File::create(dir.file("t.h5"));
  REQUIRE_THROWS_AS(f.write("/img", Tensor::from_ints({3}, {1, 256, 3}), {.as_uint8 = true}), DataError);
  REQUIRE_THROWS_WITH(f.write("/img2", Tensor::from_ints({3}, {1, 2, -1}), {.as_uint8 = true}),
                      Equals(dir.file("t.h5") + ": dataset '/img2': value -1 at index 2 does not fit uint8 (0..255)"));
  REQUIRE_THROWS_WITH(f.write("/img3", Tensor({2}), {.as_uint8 = true}),
                      Contains("as_uint8 stores an int32 tensor, got float32"));
}

TEST_CASE("hdf5: large tensors are chunked and compressed, row ranges read by hyperslab", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("big.h5");
  // 2 MiB of compressible floats: above kCompressBytes, so compression is automatic.
  Tensor big({1024, 512});
  for (int64_t i = 0; i < big.numel(); ++i) big.at(i) = static_cast<float>(i % 7);
  Tensor small({10, 4}, DType::i32);
  for (int64_t i = 0; i < small.numel(); ++i) small.idata()[i] = static_cast<int32_t>(i);
  {
    io::File f = io::File::create(path);
    f.write("/big", big);
    f.write("/small", small, {.compress = true, .chunk_rows = 3});   // chunks of 3 rows
    f.commit();
  }
  CHECK(fs::file_size(path) < static_cast<uintmax_t>(io::kCompressBytes) / 4);
  const io::File f = io::File::open_read(path);
  CHECK(same_bits(f.read("/big", DType::f32), big));
  CHECK(same_bits(f.read_rows("/big", DType::f32, 1000, 1024), big.rows(1000, 1024)));
  // Row ranges that start and end inside chunks, read one after another (the chunk cache).
  for (int64_t begin = 0; begin < 10; begin += 4) {
    const int64_t end = std::min<int64_t>(begin + 4, 10);
    CHECK(same_bits(f.read_rows("/small", DType::i32, begin, end), small.rows(begin, end)));
  }
  CHECK(f.read_rows("/small", DType::i32, 5, 5).shape() == Shape{0, 4});
  REQUIRE_THROWS_WITH(f.read_rows("/small", DType::i32, 8, 11),
                      Equals(path + ": rows [8, 11) of dataset '/small' are out of range for shape [10, 4]"));
  REQUIRE_THROWS_AS(f.read_rows("/small", DType::i32, -1, 2), ShapeError);
  REQUIRE_THROWS_WITH(f.read_rows("/small", DType::f32, 0, 2),
                      Contains("dataset '/small' holds int32 values, expected floats (float32)"));
}

TEST_CASE("hdf5: a list of rows in any order, repeats included, is read in one pass", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("rows.h5");
  Tensor x({300, 5, 3});   // compressed chunks of 7 rows, and a copy in the object header
  for (int64_t i = 0; i < x.numel(); ++i) x.at(i) = static_cast<float>(i) * 0.5f;
  Tensor ids({12, 2}, DType::i32);
  for (int64_t i = 0; i < ids.numel(); ++i) ids.idata()[i] = static_cast<int32_t>(100 + i);
  {
    io::File f = io::File::create(path);
    f.write("/x", x, {.compress = true, .chunk_rows = 7});
    f.write("/ids", ids);
    f.commit();
  }
  const io::File f = io::File::open_read(path);
  // Rows gathered in memory: what every read below must give.
  auto rows_of = [](const Tensor& t, const std::vector<int64_t>& index) {
    Shape shape = t.shape();
    shape[0] = static_cast<int64_t>(index.size());
    Tensor out(shape, t.dtype());
    for (size_t i = 0; i < index.size(); ++i) {
      const Tensor row = t.rows(index[i], index[i] + 1);
      for (int64_t k = 0; k < row.numel(); ++k) {
        if (t.dtype() == DType::f32) out.at(static_cast<int64_t>(i) * row.numel() + k) = row.at(k);
        else out.idata()[static_cast<int64_t>(i) * row.numel() + k] = row.idata()[k];
      }
    }
    return out;
  };
  for (const std::vector<int64_t>& index : std::vector<std::vector<int64_t>>{
           {299, 0, 150, 151, 152, 7, 6, 150}, {3, 4, 5, 6}, {42}, {}, {13, 13, 13}}) {
    CAPTURE(index);
    CHECK(same_bits(f.read("/x", DType::f32, {kAny, 5, 3}, io::RowSet::of(index)), rows_of(x, index)));
  }
  const std::vector<int64_t> few = {11, 0, 5};
  CHECK(same_bits(f.read("/ids", DType::i32, {}, io::RowSet::of(few)), rows_of(ids, few)));
  CHECK(same_bits(f.read("/x", DType::f32, {}, io::RowSet::range(10, 20)), x.rows(10, 20)));
  CHECK(same_bits(f.read("/x", DType::f32, {}, io::RowSet::all()), x));
  const std::vector<int64_t> outside = {1, 300};
  REQUIRE_THROWS_WITH(f.read("/x", DType::f32, {}, io::RowSet::of(outside)),
                      Equals(path + ": row 300 of dataset '/x' is out of range for shape [300, 5, 3]"));
  REQUIRE_THROWS_WITH(f.read("/x", DType::f32, {kAny, 4, 3}, io::RowSet::of(few)),
                      Equals(path + ": dataset '/x' has shape [300, 5, 3], expected [*, 4, 3]"));
  const io::RowSet r = io::RowSet::of(few);
  CHECK(r.count(12) == 3);
  CHECK(r.file_row(2) == 5);
  CHECK(io::RowSet::range(4, 9).file_row(1) == 5);
  CHECK(io::RowSet::all().count(12) == 12);
}

TEST_CASE("hdf5: UTF-8 string arrays round-trip and invalid UTF-8 is refused", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("s.h5");
  const std::vector<std::string> vocab = {"<pad>", "", "Grüße", "日本語", "a b\tc", "🙂"};
  {
    io::File f = io::File::create(path);
    f.write_strings("/vocab/src", vocab);
    f.write_strings("/vocab/none", {});
    REQUIRE_THROWS_WITH(f.write_strings("/bad", {"ok", std::string("\xff\xfe")}),
                        Contains("dataset '/bad': string 1 is not valid UTF-8"));
    REQUIRE_THROWS_AS(f.write_strings("/nul", {std::string("a\0b", 3)}), DataError);
    f.commit();
  }
  const io::File f = io::File::open_read(path);
  CHECK(f.read_strings("vocab/src") == vocab);
  CHECK(f.read_strings("/vocab/none").empty());
  CHECK(f.type_name("/vocab/src") == "string");
  REQUIRE_THROWS_WITH(f.read("/vocab/src", DType::i32),
                      Equals(path + ": dataset '/vocab/src' holds strings, expected integers (int32)"));
}

TEST_CASE("hdf5: attributes of every type, replaced in place, rendered as text", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("a.h5");
  {
    io::File f = io::File::create(path);
    f.write("/params/w", Tensor({2}));
    f.set_attr("/", "format", "attnlab/dataset");
    f.set_attr("/config", "name", std::string("tiny ünïcode"));
    f.set_attr("/config", "layers", 6);                        // int literal -> int64
    f.set_attr("/config", "big", int64_t{1} << 40);
    f.set_attr("/config", "seed", uint64_t{0xFEDCBA9876543210ull});
    f.set_attr("/config", "lr", 0.1);
    f.set_attr("/config", "lr", 3e-4);                         // replaces
    f.set_attr("/params/w", "note", "on a dataset");
    f.set_attr("/metrics", "bleu", io::AttrValue{27.5});       // creates the group
    f.commit();
  }
  const io::File f = io::File::open_read(path);
  CHECK(f.attr_string("/", "format") == "attnlab/dataset");
  CHECK(f.attr_string("config", "name") == "tiny ünïcode");
  CHECK(f.attr_int("/config", "layers") == 6);
  CHECK(f.attr_int("/config", "big") == int64_t{1} << 40);
  CHECK(f.attr_uint("/config", "seed") == 0xFEDCBA9876543210ull);
  CHECK(f.attr_double("/config", "lr") == 3e-4);
  CHECK(f.attr_double("/config", "layers") == 6.0);            // integers read as numbers
  CHECK(f.attr_string("/params/w", "note") == "on a dataset");
  CHECK(std::get<double>(f.attr("/metrics", "bleu")) == 27.5);
  CHECK(std::get<int64_t>(f.attr("/config", "layers")) == 6);
  CHECK(std::get<std::string>(f.attr("/config", "name")) == "tiny ünïcode");
  CHECK(f.attr_names("/config") == std::vector<std::string>{"big", "layers", "lr", "name", "seed"});
  CHECK(f.attr_text("/config", "lr") == "0.0003");
  CHECK(f.attr_text("/config", "seed") == "18364758544493064720");
  CHECK(f.attr_text("/config", "name") == "tiny ünïcode");
  CHECK(f.has_attr("/config", "lr"));
  CHECK_FALSE(f.has_attr("/config", "dropout"));
  CHECK_FALSE(f.has_attr("/nowhere", "lr"));

  REQUIRE_THROWS_WITH(f.attr_double("/config", "dropout"),
                      Equals(path + ": no attribute 'dropout' on '/config' (found: big, layers, lr, name, seed)"));
  REQUIRE_THROWS_WITH(f.attr_int("/config", "lr"),
                      Equals(path + ": attribute 'lr' of '/config' holds float64 values, expected an integer"));
  REQUIRE_THROWS_WITH(f.attr_string("/config", "layers"),
                      Equals(path + ": attribute 'layers' of '/config' holds int64 values, expected a string"));
  REQUIRE_THROWS_AS(f.attr_int("/config", "seed"), DataError);   // > INT64_MAX
  REQUIRE_THROWS_WITH(f.attr_names("/confg"), Contains("no group or dataset '/confg' (found: /config, /metrics, /params)"));
}

TEST_CASE("hdf5: file info, and require_format names what it found", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("m.h5");
  {
    io::File f = io::File::create(path);
    io::write_file_info(f, {"attnlab/model", io::kFormatVersion, "transformer", "attn-transformer 0.1.0",
                            "attn-transformer train --data x.h5"});
    f.commit();
  }
  const io::File f = io::File::open_read(path);
  const io::FileInfo info = io::read_file_info(f);
  CHECK(info.format == "attnlab/model");
  CHECK(info.format_version == io::kFormatVersion);
  CHECK(info.kind == "transformer");
  CHECK(info.created_by == "attn-transformer 0.1.0");
  CHECK(info.command == "attn-transformer train --data x.h5");
  CHECK_NOTHROW(io::require_format(f, "attnlab/model", "transformer"));
  REQUIRE_THROWS_WITH(io::require_format(f, "attnlab/dataset"),
                      Equals(path + ": format is 'attnlab/model', expected 'attnlab/dataset'"));
  REQUIRE_THROWS_WITH(io::require_format(f, "attnlab/model", "seq2seq"),
                      Equals(path + ": kind is 'transformer', expected 'seq2seq'"));

  const std::string plain = make_fixture(dir, "plain.h5");
  REQUIRE_THROWS_AS(io::read_file_info(io::File::open_read(plain)), FormatError);
  REQUIRE_THROWS_WITH(io::require_format(io::File::open_read(plain), "attnlab/dataset"),
                      Contains("plain.h5: not an attnlab file (no root attribute 'format')"));

  const std::string future = dir.file("future.h5");
  {
    io::File g = io::File::create(future);
    io::write_file_info(g, {"attnlab/model", io::kFormatVersion + 1, "transformer", "", ""});
    g.commit();
  }
  REQUIRE_THROWS_WITH(io::require_format(io::File::open_read(future), "attnlab/model"),
                      Contains("format version 3 is newer than this build reads (2)"));
}

TEST_CASE("hdf5: open_dataset reads a data set, or a file that does not say what it is, and nothing else",
          "[io][hdf5]") {
  test::TempDir dir;
  const auto make = [&](const std::string& name, const std::string& format, int64_t version) {
    io::File f = io::File::create(dir.file(name));
    io::write_file_info(f, {format, version, "copy", "attn-data 0.1.0", ""});
    f.commit();
    return dir.file(name);
  };
  CHECK_NOTHROW(io::open_dataset(make("d.h5", "attnlab/dataset", io::kFormatVersion)));
  CHECK_NOTHROW(io::open_dataset(make("d1.h5", "attnlab/dataset", 1)));
  CHECK_NOTHROW(io::open_dataset(make_fixture(dir, "plain.h5")));   // h5py's: no root attributes
  REQUIRE_THROWS_WITH(io::open_dataset(make("m.h5", "attnlab/model", io::kFormatVersion)),
                      Equals(dir.file("m.h5") + ": format is 'attnlab/model', expected 'attnlab/dataset'"));
  REQUIRE_THROWS_WITH(io::open_dataset(make("v99.h5", "attnlab/dataset", 99)),
                      Contains("v99.h5: format version 99 is newer than this build reads (2)"));
  REQUIRE_THROWS_WITH(io::open_dataset(make("v0.h5", "attnlab/dataset", 0)),
                      Contains("v0.h5: format version 0, expected 1 to 2"));
}

TEST_CASE("hdf5: missing datasets, wrong dtype and wrong shape name file, path and both sides",
          "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = make_fixture(dir);
  const io::File f = io::File::open_read(path);
  REQUIRE_THROWS_AS(f.read("/train/x", DType::i32), FormatError);
  REQUIRE_THROWS_WITH(f.read("/train/x", DType::i32),
                      Equals(path + ": no dataset '/train/x' (found: /train/src, /train/tgt)"));
  REQUIRE_THROWS_WITH(f.read("/valid/src", DType::i32),
                      Equals(path + ": no dataset '/valid/src' (no group '/valid'; found: /train, /x)"));
  REQUIRE_THROWS_WITH(f.shape("/x/y"),
                      Equals(path + ": no dataset '/x/y' ('/x' is a dataset; found: /train, /x)"));
  REQUIRE_THROWS_WITH(f.read("/train", DType::i32),
                      Equals(path + ": '/train' is a group, expected a dataset (it holds: src, tgt)"));
  REQUIRE_THROWS_WITH(f.list("/test"), Equals(path + ": no group '/test' (found: /train, /x)"));
  REQUIRE_THROWS_AS(f.read("/train/src", DType::f32), FormatError);
  REQUIRE_THROWS_WITH(f.read("/x", DType::i32),
                      Equals(path + ": dataset '/x' holds float32 values, expected integers (int32)"));
  REQUIRE_THROWS_WITH(f.read("/train/src", DType::f32),
                      Equals(path + ": dataset '/train/src' holds int32 values, expected floats (float32)"));
  REQUIRE_THROWS_AS(f.read("/train/src", DType::i32, {kAny, 8}), ShapeError);
  REQUIRE_THROWS_WITH(f.read("/train/src", DType::i32, {kAny, 8}),
                      Equals(path + ": dataset '/train/src' has shape [10, 7], expected [*, 8]"));
  REQUIRE_THROWS_WITH(f.read("/train/src", DType::i32, {kAny, 7, 1}),     // wrong rank
                      Equals(path + ": dataset '/train/src' has shape [10, 7], expected [*, 7, 1]"));
  REQUIRE_THROWS_WITH(f.read_strings("/train/src"),
                      Equals(path + ": dataset '/train/src' holds int32 values, expected strings"));
}

TEST_CASE("hdf5: missing, empty, foreign and truncated files throw typed errors", "[io][hdf5]") {
  test::TempDir dir;
  const std::string missing = dir.file("missing.h5");
  REQUIRE_THROWS_AS(io::File::open_read(missing), IoError);
  REQUIRE_THROWS_WITH(io::File::open_read(missing), Equals(missing + ": cannot open: no such file"));
  REQUIRE_THROWS_WITH(io::File::open_read(dir.path().string()), Contains("it is a folder"));

  const std::string empty = dir.file("empty.h5");
  spit(empty, "");
  REQUIRE_THROWS_AS(io::File::open_read(empty), FormatError);
  REQUIRE_THROWS_WITH(io::File::open_read(empty), Equals(empty + ": not an HDF5 file (the file is empty)"));

  const std::string text = dir.file("x.h5");
  spit(text, "src,tgt\nhallo,hello\n");
  REQUIRE_THROWS_AS(io::File::open_read(text), FormatError);
  REQUIRE_THROWS_WITH(io::File::open_read(text), Equals(text + ": not an HDF5 file (no HDF5 signature found)"));

  const std::string whole = slurp(make_fixture(dir));
  const std::string cut = dir.file("cut.h5");
  spit(cut, whole.substr(0, whole.size() / 2));
  REQUIRE_THROWS_AS(io::File::open_read(cut), FormatError);
  REQUIRE_THROWS_WITH(io::File::open_read(cut), StartsWith(cut + ": damaged or truncated HDF5 file ("));
}

TEST_CASE("hdf5: an uncommitted File leaves the earlier file intact and no temp file", "[io][hdf5]") {
  test::TempDir dir;
  const std::string path = dir.file("out.h5");
  const Tensor first = Tensor::from({2}, {1, 2}), second = Tensor::from({3}, {7, 8, 9});
  {
    io::File f = io::File::create(path);
    f.write("/v", first);
    f.commit();
  }
  {
    io::File f = io::File::create(path);
    f.write("/v", second);
    // Until commit the new content lives in a hidden temporary file beside the target...
    const auto names = folder_entries(dir.path());
    REQUIRE(names.size() == 2);
    CHECK_THAT(names[0], StartsWith(".out.h5.tmp." + std::to_string(::getpid()) + "."));
    CHECK(names[1] == "out.h5");
    CHECK(same_bits(io::File::open_read(path).read("/v", DType::f32), first));
  }   // ...and a File dropped without commit (an exception, a failed run) removes it.
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"out.h5"});
  CHECK(same_bits(io::File::open_read(path).read("/v", DType::f32), first));

  {
    io::File f = io::File::create(path);
    f.write("/v", second);
    f.commit();
    REQUIRE_THROWS_WITH(f.commit(), Contains("already committed"));
    REQUIRE_THROWS_WITH(f.write("/w", second), Contains("already committed and closed"));
  }
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"out.h5"});
  CHECK(same_bits(io::File::open_read(path).read("/v", DType::f32), second));
}

TEST_CASE("hdf5: writes refuse existing names, read-only files and missing folders", "[io][hdf5]") {
  test::TempDir dir;
  io::File f = io::File::create(dir.file("w.h5"));
  f.write("/a", Tensor({1}));
  REQUIRE_THROWS_WITH(f.write("a", Tensor({1})), Contains("dataset '/a' already exists"));
  REQUIRE_THROWS_WITH(f.write_strings("/a", {"x"}), Contains("dataset '/a' already exists"));
  io::File moved = std::move(f);
  moved.commit();

  io::File r = io::File::open_read(dir.file("w.h5"));
  REQUIRE_THROWS_WITH(r.write("/b", Tensor({1})), Contains("opened for reading"));
  REQUIRE_THROWS_WITH(r.set_attr("/", "k", 1), Contains("opened for reading"));

  const std::string nowhere = dir.file("no/such/folder/out.h5");
  REQUIRE_THROWS_AS(io::File::create(nowhere), IoError);
  REQUIRE_THROWS_WITH(io::File::create(nowhere),
                      Equals(nowhere + ": cannot write: folder '" + dir.file("no/such/folder") + "' does not exist"));
  REQUIRE_THROWS_WITH(io::File::create(dir.path().string()), Contains("cannot write"));
}

TEST_CASE("hdf5: '-' writes an HDF5 image to stdout and reads one from stdin, once", "[io][hdf5]") {
  test::TempDir dir;
  const Tensor x = Tensor::from({2, 2}, {1, 2, 3, 4});
  const std::string image = dir.file("image.h5");

  // A child writes to '-' with its stdout captured in a file; a second '-' output is refused.
  const std::string wrote = run_in_child(STDOUT_FILENO, image, O_WRONLY | O_CREAT | O_TRUNC, [&] {
    io::File f = io::File::create("-");
    f.write("/x", x);
    f.set_attr("/", "kind", "copy");
    f.commit();
    try {
      io::File::create("-");
      return std::string("second '-' output accepted");
    } catch (const IoError& e) {
      return std::string(e.what()).find("already carries an HDF5 file") == std::string::npos
                 ? std::string("wrong message: ") + e.what() : std::string();
    }
  });
  REQUIRE(wrote == "");
  const io::File captured = io::File::open_read(image);
  CHECK(same_bits(captured.read("/x", DType::f32), x));
  CHECK(captured.attr_string("/", "kind") == "copy");

  // A child reads that image from '-'; a second read fails at once instead of hanging.
  const std::string read = run_in_child(STDIN_FILENO, image, O_RDONLY, [&] {
    const io::File f = io::File::open_read("-");
    if (f.display_name() != "stdin") return std::string("display name ") + f.display_name();
    if (!same_bits(f.read("/x", DType::f32), x)) return std::string("different tensor");
    try {
      f.read("/y", DType::f32);
      return std::string("missing dataset read");
    } catch (const FormatError& e) {
      if (std::string(e.what()) != "stdin: no dataset '/y' (found: /x)") return std::string(e.what());
    }
    try {
      io::File::open_read("-");
      return std::string("stdin read twice");
    } catch (const IoError& e) {
      return std::string(e.what()).find("already read by this process") == std::string::npos
                 ? std::string("wrong message: ") + e.what() : std::string();
    }
  });
  CHECK(read == "");

  // Anything else on stdin is a typed error too.
  const std::string text = dir.file("text.txt");
  spit(text, "not hdf5 at all");
  const std::string foreign = run_in_child(STDIN_FILENO, text, O_RDONLY, [&] {
    try {
      io::File::open_read("-");
      return std::string("opened");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
  });
  CHECK(foreign == "stdin: not an HDF5 file (no HDF5 signature in the 15 bytes read from standard input)");
}

TEST_CASE("hdf5: a named pipe (process substitution) is read as an image", "[io][hdf5]") {
  test::TempDir dir;
  const std::string bytes = slurp(make_fixture(dir));
  const std::string fifo = dir.file("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const pid_t writer = ::fork();
  if (writer == 0) {
    std::ofstream(fifo, std::ios::binary) << bytes;
    ::_exit(0);
  }
  const io::File f = io::File::open_read(fifo);
  int status = 0;
  ::waitpid(writer, &status, 0);
  CHECK(f.shape("/train/src") == Shape{10, 7});
  CHECK(f.read("/train/src", DType::i32).idata()[69] == 69);
}

// attn-data mnist-strips and shapes, run as a user would: the caption layout they write (and
// attn-data info describes), the summary line, determinism by --seed, usage errors (exit 2) and
// bad or missing MNIST files (exit 3, naming the file). MNIST comes from small IDX fixtures
// (tests/support/mnist_fixture.hpp); one case reads the real files when the shared data is there.
#include <filesystem>

#include "attn/io/hdf5_file.hpp"
#include "mnist_fixture.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

Result attn_data(const test::TempDir& dir, const std::string& args) {
  return test::run_shell(dir, test::quoted_tool("attn-data") + " " + args);
}

// dir/mnist with n fixture images.
void write_mnist(const test::TempDir& dir, int64_t n) {
  std::filesystem::create_directories(dir.path() / "mnist");
  test::write_mnist_fixture(dir.file("mnist"), n);
}

bool same_dataset(const io::File& a, const io::File& b, const std::string& name) {
  const Tensor x = a.read(name), y = b.read(name);
  if (x.shape() != y.shape() || x.dtype() != y.dtype()) return false;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.dtype() == DType::f32 ? x.data()[i] != y.data()[i] : x.idata()[i] != y.idata()[i]) return false;
  return true;
}

}  // namespace

TEST_CASE("attn-data mnist-strips writes the caption layout that attn-data info describes", "[cli][mnist-strips]") {
  test::TempDir dir;
  write_mnist(dir, 60);
  const Result r = attn_data(dir, "mnist-strips --data-dir mnist --n 6 --valid-n 2 --test-n 3 --max-digits 3 "
                                  "--width 96 --out m.h5");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "attn-data mnist-strips: wrote m.h5 (train 6, valid 2, test 3 examples)\n");
  CHECK_THAT(r.err, Contains("attn-data mnist-strips: configuration") && Contains("--max-gap"));

  const io::File f = io::File::open_read(dir.file("m.h5"));
  const io::FileInfo info = io::read_file_info(f);
  CHECK(info.format == "attnlab/dataset");
  CHECK(info.kind == "mnist-strips");
  CHECK_THAT(info.command, Contains("mnist-strips --data-dir mnist"));
  CHECK(f.attr_string("/config", "data_dir") == "mnist");
  CHECK(f.attr_int("/config", "max_digits") == 3);
  CHECK(f.attr_int("/config", "min_digits") == 1);
  CHECK(f.attr_int("/config", "height") == 32);
  CHECK(f.attr_int("/config", "width") == 96);
  CHECK(f.attr_int("/config", "max_gap") == 4);
  CHECK(f.attr_int("/config", "seed") == 1);
  CHECK(f.shape("/train/images") == Shape{6, 1, 32, 96});
  CHECK(f.type_name("/train/images") == "float32");
  CHECK(f.shape("/test/tgt") == Shape{3, 4});
  CHECK(f.type_name("/test/tgt") == "int32");
  CHECK(f.shape("/valid/tgt_len") == Shape{2});
  CHECK(f.shape("/valid/boxes") == Shape{2, 4, 4});
  CHECK(f.shape("/test/mnist_index") == Shape{3, 3});
  // The caption of test example 0 is the labels of its MNIST images, from test's pool (i mod 10 = 9).
  const Tensor tgt = f.read("/test/tgt"), len = f.read("/test/tgt_len"), index = f.read("/test/mnist_index");
  for (int32_t t = 0; t + 1 < len.idata()[0]; ++t) {
    const int32_t src = index.idata()[t];
    CHECK(src % 10 == 9);
    CHECK(tgt.idata()[t] == 4 + test::fixture_label(src));
  }
  const std::vector<std::string> vocab = f.read_strings("/vocab/tgt");
  REQUIRE(vocab.size() == 14);
  CHECK(vocab[4] == "zero");
  CHECK(vocab[13] == "nine");

  const Result described = attn_data(dir, "info --data m.h5");
  INFO(described.err);
  REQUIRE(described.code == 0);
  CHECK_THAT(described.out, Contains("kind           mnist-strips") && Contains("/train/images ") &&
                                Contains("float32  [6, 1, 32, 96]") && Contains("/test/boxes ") &&
                                Contains("int32    [3, 4, 4]") && Contains("/test/mnist_index ") &&
                                Contains("\"<pad>\" \"<s>\" \"</s>\" \"<unk>\" \"zero\" \"one\" \"two\" \"three\" ..."));

  // The same seed gives the same file; another seed another one.
  REQUIRE(attn_data(dir, "mnist-strips --data-dir mnist --n 6 --valid-n 2 --test-n 3 --max-digits 3 --width 96 "
                         "--out again.h5 --quiet").code == 0);
  REQUIRE(attn_data(dir, "mnist-strips --data-dir mnist --n 6 --valid-n 2 --test-n 3 --max-digits 3 --width 96 "
                         "--seed 2 --out other.h5 --quiet").code == 0);
  const io::File again = io::File::open_read(dir.file("again.h5")), other = io::File::open_read(dir.file("other.h5"));
  for (const char* name : {"/train/images", "/train/tgt", "/train/boxes", "/test/mnist_index"})
    CHECK(same_dataset(f, again, name));
  CHECK(!same_dataset(f, other, "/train/images"));
}

TEST_CASE("attn-data mnist-strips: bad options exit 2, bad or missing MNIST files exit 3", "[cli][mnist-strips]") {
  test::TempDir dir;
  write_mnist(dir, 60);
  Result r = attn_data(dir, "mnist-strips --data-dir mnist --width 150 --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK(r.err == "attn-data mnist-strips: mnist-strips: width 150 cannot hold max_digits 5 digits 28 pixels wide "
                 "with gaps of up to max_gap 4: that needs 156 (5 x 28 + 4 x 4)\n");
  r = attn_data(dir, "mnist-strips --data-dir nowhere --width 150 --out x.h5 --quiet");
  CHECK(r.code == 2);   // the options are checked before any file is read
  r = attn_data(dir, "mnist-strips --data-dir mnist --min-digits 4 --max-digits 3 --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--max-digits must be >= --min-digits (4), got 3"));
  r = attn_data(dir, "mnist-strips --data-dir mnist --height 20 --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--height must be >= 28, got 20"));
  r = attn_data(dir, "mnist-strips --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("data-dir"));
  r = attn_data(dir, "mnist-strips --data-dir mnist --warp-rotate 100 --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--warp-rotate must be in [0, 90], got 100"));
  r = attn_data(dir, "mnist-strips --data-dir mnist --warp-shift-y 9 --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--warp-shift-y must be in [0, 8], got 9"));
  r = attn_data(dir, "mnist-strips --data-dir mnist --warp-elastic 34 --warp-elastic-sigma 0.5 --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--warp-elastic-sigma must be in [1, 14], got 0.5"));

  r = attn_data(dir, "mnist-strips --data-dir nowhere --out x.h5 --quiet");
  CHECK(r.code == 3);
  CHECK(r.err == "attn-data mnist-strips: cannot open MNIST image file 'nowhere/t10k-images-idx3-ubyte.gz'\n");
  test::write_gzip_bytes(dir.file("mnist/t10k-labels-idx1-ubyte.gz"), test::idx_images_bytes(2));
  r = attn_data(dir, "mnist-strips --data-dir mnist --out x.h5 --quiet");
  CHECK(r.code == 3);
  CHECK(r.err == "attn-data mnist-strips: mnist/t10k-labels-idx1-ubyte.gz: not an IDX label file: magic number "
                 "2051, expected 2049 (images and labels swapped?)\n");
  const std::string gz = test::slurp(dir.file("mnist/t10k-images-idx3-ubyte.gz"));
  test::write_text(dir.file("mnist/t10k-images-idx3-ubyte.gz"), gz.substr(0, gz.size() - 100));
  r = attn_data(dir, "mnist-strips --data-dir mnist --out x.h5 --quiet");
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("attn-data mnist-strips: mnist/t10k-images-idx3-ubyte.gz: damaged gzip data (") &&
                        Contains("truncated or corrupt"));
  CHECK(!std::filesystem::exists(dir.file("x.h5")));
}

TEST_CASE("attn-data shapes writes the caption layout, deterministic by seed", "[cli][shapes]") {
  test::TempDir dir;
  const Result r = attn_data(dir, "shapes --n 5 --valid-n 2 --test-n 2 --height 40 --width 56 --out s.h5");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "attn-data shapes: wrote s.h5 (train 5, valid 2, test 2 examples)\n");
  const io::File f = io::File::open_read(dir.file("s.h5"));
  CHECK(io::read_file_info(f).kind == "shapes");
  CHECK(f.attr_int("/config", "min_size") == 10);
  CHECK(f.attr_int("/config", "max_size") == 18);
  CHECK(f.shape("/train/images") == Shape{5, 3, 40, 56});
  CHECK(f.shape("/train/tgt") == Shape{5, 9});
  CHECK(f.shape("/valid/boxes") == Shape{2, 9, 4});
  CHECK(f.shape("/test/tgt_len") == Shape{2});
  CHECK(!f.exists("/train/mnist_index"));
  const std::vector<std::string> vocab = f.read_strings("/vocab/tgt");
  REQUIRE(vocab.size() == 17);
  CHECK(vocab[4] == "a");
  // Every caption starts "a <colour> <shape>" with the object's box on both words.
  const Tensor tgt = f.read("/train/tgt"), boxes = f.read("/train/boxes");
  for (int64_t i = 0; i < 5; ++i) {
    CHECK(vocab.at(static_cast<size_t>(tgt.idata()[i * 9])) == "a");
    CHECK(boxes.idata()[i * 36] == -1);
    for (int c = 0; c < 4; ++c) CHECK(boxes.idata()[i * 36 + 4 + c] == boxes.idata()[i * 36 + 8 + c]);
    CHECK(boxes.idata()[i * 36 + 4] >= 0);
  }
  REQUIRE(attn_data(dir, "shapes --n 5 --valid-n 2 --test-n 2 --height 40 --width 56 --out again.h5 --quiet").code == 0);
  const io::File again = io::File::open_read(dir.file("again.h5"));
  for (const char* name : {"/train/images", "/train/tgt", "/test/boxes"}) CHECK(same_dataset(f, again, name));
  const Result described = attn_data(dir, "info --data s.h5");
  REQUIRE(described.code == 0);
  CHECK_THAT(described.out, Contains("kind           shapes") && Contains("float32  [5, 3, 40, 56]"));
}

TEST_CASE("attn-data shapes: sizes that do not fit are usage errors", "[cli][shapes]") {
  test::TempDir dir;
  Result r = attn_data(dir, "shapes --max-size 20 --width 36 --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK(r.err == "attn-data shapes: shapes: two objects of max_size 20 must fit side by side and one above the "
                 "other: height and width must be >= 40, got 48 x 36\n");
  r = attn_data(dir, "shapes --min-size 3 --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--min-size must be >= 4, got 3"));
  r = attn_data(dir, "shapes --min-size 12 --max-size 11 --out x.h5 --quiet");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--max-size must be >= --min-size (12), got 11"));
  CHECK(!std::filesystem::exists(dir.file("x.h5")));
}

TEST_CASE("attn-data mnist-strips from the real MNIST test set", "[data][mnist-strips]") {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "mnist" / "t10k-images-idx3-ubyte.gz")) {
    test::skip_test("the MNIST data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return;
  }
  test::TempDir dir;
  const Result r = attn_data(dir, "mnist-strips --data-dir '" + (root / "mnist").string() +
                                      "' --n 20 --valid-n 5 --test-n 5 --out m.h5 --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const io::File f = io::File::open_read(dir.file("m.h5"));
  CHECK(f.shape("/train/images") == Shape{20, 1, 32, 160});
  CHECK(f.shape("/train/tgt") == Shape{20, 6});
  CHECK(attn_data(dir, "info --data m.h5").code == 0);
}

// The image-captioning sets of datasets/: the MNIST IDX reader, mnist-strips and shapes. Every
// caption is re-read from the images and boxes: each word's box must hold exactly its object.
// mnist-strips reads small IDX fixtures (tests/support/mnist_fixture.hpp); one case reads the
// real MNIST test set when the shared data is there.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <set>
#include <vector>

#include "attn/datasets/gzip_file.hpp"
#include "attn/datasets/idx.hpp"
#include "attn/datasets/mnist_strips.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "attn/datasets/shapes.hpp"
#include "attn/io/hdf5_file.hpp"
#include "mnist_fixture.hpp"
#include "test_support.hpp"

using namespace attn;
using namespace attn::datasets;
using Catch::Contains;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const size_t bytes = static_cast<size_t>(a.numel()) * 4;
  return a.dtype() == DType::f32 ? std::memcmp(a.data(), b.data(), bytes) == 0
                                 : std::memcmp(a.idata(), b.idata(), bytes) == 0;
}

bool same_split(const CaptionSplit& a, const CaptionSplit& b) {
  return same_bits(a.images, b.images) && same_bits(a.tgt, b.tgt) && same_bits(a.tgt_len, b.tgt_len) &&
         same_bits(a.boxes, b.boxes);
}

bool same_captions(const Splits<CaptionSplit>& a, const Splits<CaptionSplit>& b) {
  for (int k = 0; k < 3; ++k)
    if (!same_split(a[k], b[k])) return false;
  return true;
}

Box box_at(const CaptionSplit& s, int64_t i, int64_t t) {
  const int32_t* b = s.boxes.idata() + (i * s.boxes.dim(1) + t) * 4;
  return {b[0], b[1], b[2], b[3]};
}
bool no_box(const Box& b) { return b.y0 == -1 && b.x0 == -1 && b.y1 == -1 && b.x1 == -1; }
bool inside(const Box& b, int64_t y, int64_t x) { return y >= b.y0 && y < b.y1 && x >= b.x0 && x < b.x1; }

// The caption's words and their boxes; checks that EOS ends it and that EOS and padding have no box.
struct Caption {
  std::vector<int32_t> words;
  std::vector<Box> boxes;
};
Caption caption(const CaptionSplit& s, int64_t i) {
  const int64_t T = s.tgt.dim(1), L = s.tgt_len.idata()[i] - 1;
  REQUIRE(L >= 1);
  REQUIRE(L < T);
  const int32_t* row = s.tgt.idata() + i * T;
  Caption c;
  for (int64_t t = 0; t < L; ++t) {
    CHECK(row[t] >= data::kNumReserved);
    c.words.push_back(row[t]);
    c.boxes.push_back(box_at(s, i, t));
  }
  CHECK(row[L] == data::kEos);
  for (int64_t t = L + 1; t < T; ++t) CHECK(row[t] == data::kPad);
  for (int64_t t = L; t < T; ++t) CHECK(no_box(box_at(s, i, t)));
  return c;
}

// A box inside the image, non-empty, whose every edge row and column holds a pixel > 0 in
// channel plane `image` ([H, W], summed over channels by the caller): the tight box of its ink.
void check_tight(const std::vector<float>& plane, int64_t H, int64_t W, const Box& b) {
  REQUIRE(b.y0 >= 0);
  REQUIRE(b.x0 >= 0);
  REQUIRE(b.y1 <= H);
  REQUIRE(b.x1 <= W);
  REQUIRE(b.y0 < b.y1);
  REQUIRE(b.x0 < b.x1);
  const auto row_ink = [&](int64_t y) {
    for (int64_t x = b.x0; x < b.x1; ++x)
      if (plane[static_cast<size_t>(y * W + x)] > 0) return true;
    return false;
  };
  const auto col_ink = [&](int64_t x) {
    for (int64_t y = b.y0; y < b.y1; ++y)
      if (plane[static_cast<size_t>(y * W + x)] > 0) return true;
    return false;
  };
  CHECK(row_ink(b.y0));
  CHECK(row_ink(b.y1 - 1));
  CHECK(col_ink(b.x0));
  CHECK(col_ink(b.x1 - 1));
}

// Image i of a split as one [H, W] plane: the sum over channels.
std::vector<float> plane(const CaptionSplit& s, int64_t i) {
  const int64_t C = s.images.dim(1), H = s.images.dim(2), W = s.images.dim(3);
  std::vector<float> p(static_cast<size_t>(H * W), 0.0f);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < H * W; ++k) p[static_cast<size_t>(k)] += s.images.data()[(i * C + c) * H * W + k];
  return p;
}

// Whether the box b of image p (W pixels wide) holds exactly MNIST image src's ink box, unscaled.
bool shows_mnist_ink(const std::vector<float>& p, int64_t W, const Box& b, const IdxImages& im, int32_t src) {
  const Box ink = ink_box(im.image(src), im.rows, im.cols, im.cols);
  if (b.y1 - b.y0 != ink.y1 - ink.y0 || b.x1 - b.x0 != ink.x1 - ink.x0) return false;
  for (int64_t y = 0; y < b.y1 - b.y0; ++y)
    for (int64_t x = 0; x < b.x1 - b.x0; ++x)
      if (p[static_cast<size_t>((b.y0 + y) * W + b.x0 + x)] !=
          static_cast<float>(im.image(src)[(ink.y0 + y) * im.cols + ink.x0 + x]) / 255.0f)
        return false;
  return true;
}

MnistDigits fixture_digits(const test::TempDir& dir, int64_t n) {
  test::write_mnist_fixture(dir.path().string(), n);
  return read_mnist(dir.path().string());
}

// Every example of every split against the MNIST images and labels it came from. Warped training
// digits (cfg.train_warp) are checked for their labels and tight boxes, not for MNIST's pixels.
void check_strips(const MnistStrips& d, const MnistDigits& mnist, const MnistStripsConfig& cfg) {
  const int64_t H = cfg.height, W = cfg.width, K = cfg.max_digits;
  const IdxImages& im = mnist.images;
  std::set<int32_t> used[3];
  for (int k = 0; k < 3; ++k) {
    const CaptionSplit& s = d.splits[k];
    const Tensor& index = d.mnist_index[k];
    REQUIRE(s.images.shape() == Shape{s.size(), 1, H, W});
    REQUIRE(s.tgt.shape() == Shape{s.size(), K + 1});
    REQUIRE(s.boxes.shape() == Shape{s.size(), K + 1, 4});
    REQUIRE(index.shape() == Shape{s.size(), K});
    for (int64_t i = 0; i < s.size(); ++i) {
      const Caption c = caption(s, i);
      const auto digits = static_cast<int64_t>(c.words.size());
      CHECK(digits >= cfg.min_digits);
      CHECK(digits <= cfg.max_digits);
      const std::vector<float> p = plane(s, i);
      for (float v : p) REQUIRE((v >= 0.0f && v <= 1.0f));
      std::vector<bool> covered(p.size(), false);
      for (int64_t t = 0; t < K; ++t) {
        const int32_t src = index.idata()[i * K + t];
        if (t >= digits) {
          CHECK(src == -1);
          continue;
        }
        REQUIRE(src >= 0);
        REQUIRE(src < im.count);
        CHECK(mnist_pool(src) == k);
        used[k].insert(src);
        // The word is the label of the digit's MNIST image.
        CHECK(c.words[static_cast<size_t>(t)] == data::kNumReserved + mnist.labels[static_cast<size_t>(src)]);
        // Its box is the tight box of the digit's ink and, unwarped, the pixels there are the MNIST
        // ink box's.
        const Box b = c.boxes[static_cast<size_t>(t)];
        check_tight(p, H, W, b);
        if (k != 0 || !cfg.train_warp.any()) REQUIRE(shows_mnist_ink(p, W, b, im, src));
        for (int64_t y = b.y0; y < b.y1; ++y)
          for (int64_t x = b.x0; x < b.x1; ++x) covered[static_cast<size_t>(y * W + x)] = true;
        // Left to right, not overlapping the previous digit.
        if (t > 0) CHECK(c.boxes[static_cast<size_t>(t - 1)].x1 <= b.x0);
      }
      // No ink outside the digits' boxes.
      for (size_t at = 0; at < p.size(); ++at)
        if (!covered[at]) REQUIRE(p[at] == 0.0f);
    }
  }
  for (int32_t v : used[1]) CHECK(!used[0].count(v));
  for (int32_t v : used[2]) CHECK((!used[0].count(v) && !used[1].count(v)));
}

// Strips of seed 3 with cfg's training warp, checked (check_strips), whose valid and test splits
// are the same bits as without the warp.
MnistStrips checked_warped_strips(const MnistDigits& mnist, const MnistStripsConfig& cfg, const SplitSizes& sizes) {
  MnistStrips d = make_mnist_strips(mnist, cfg, sizes, 3);
  const MnistStrips plain = make_mnist_strips(mnist, MnistStripsConfig{}, sizes, 3);
  check_strips(d, mnist, cfg);
  CHECK(same_split(d.splits.valid, plain.splits.valid));
  CHECK(same_split(d.splits.test, plain.splits.test));
  return d;
}

// Calls f(box, src, unchanged) for every digit of the training strips: its box, its MNIST image,
// and whether it shows that image's ink unchanged where it was placed.
template <class F>
void for_each_training_digit(const MnistStrips& d, const MnistDigits& mnist, const MnistStripsConfig& cfg, F f) {
  const CaptionSplit& train = d.splits.train;
  for (int64_t i = 0; i < train.size(); ++i) {
    const Caption c = caption(train, i);
    const std::vector<float> pixels = plane(train, i);
    for (size_t t = 0; t < c.words.size(); ++t) {
      const int32_t src = d.mnist_index.train.idata()[i * cfg.max_digits + static_cast<int64_t>(t)];
      f(c.boxes[t], src, shows_mnist_ink(pixels, cfg.width, c.boxes[t], mnist.images, src));
    }
  }
}

// How many training digits show their MNIST image's ink unchanged where they were placed.
int64_t unchanged_training_digits(const MnistStrips& d, const MnistDigits& mnist, const MnistStripsConfig& cfg) {
  int64_t unchanged = 0;
  for_each_training_digit(d, mnist, cfg, [&](const Box&, int32_t, bool same) { unchanged += same; });
  return unchanged;
}

}  // namespace

TEST_CASE("read_idx_images and read_idx_labels read MNIST IDX files, plain or gzip", "[io][mnist]") {
  test::TempDir dir;
  test::write_mnist_fixture(dir.path().string(), 12);
  const IdxImages im = read_idx_images(dir.file("t10k-images-idx3-ubyte.gz"));
  CHECK(im.count == 12);
  CHECK(im.rows == 28);
  CHECK(im.cols == 28);
  REQUIRE(im.pixels.size() == 12 * 28 * 28);
  const test::FixtureInk ink = test::fixture_ink(5);
  CHECK(im.image(5)[ink.y0 * 28 + ink.x0] > 0);
  CHECK(im.image(5)[(ink.y0 - 1) * 28 + ink.x0] == 0);
  const Box b = ink_box(im.image(5), 28, 28, 28);
  CHECK((b.y0 == ink.y0 && b.x0 == ink.x0 && b.y1 == ink.y1 && b.x1 == ink.x1));
  const std::vector<uint8_t> labels = read_idx_labels(dir.file("t10k-labels-idx1-ubyte.gz"));
  REQUIRE(labels.size() == 12);
  CHECK(labels[5] == test::fixture_label(5));
  test::write_text(dir.file("plain-images"), test::idx_images_bytes(3));   // gzread passes plain files through
  CHECK(read_idx_images(dir.file("plain-images")).count == 3);
}

TEST_CASE("read_file_bytes stops at its limit, naming the file, plain or gzip (an endless /dev/zero)", "[io][mnist]") {
  test::TempDir dir;
  test::write_text(dir.file("plain.txt"), std::string(5000, 'a'));
  test::write_gzip_bytes(dir.file("packed.gz"), std::string(5000, 'a'));
  for (const char* name : {"plain.txt", "packed.gz"}) {
    CHECK(datasets::read_file_bytes(dir.file(name), "text file", 5000).size() == 5000);
    REQUIRE_THROWS_AS(datasets::read_file_bytes(dir.file(name), "text file", 4999), DataError);
    REQUIRE_THROWS_WITH(datasets::read_file_bytes(dir.file(name), "text file", 4999),
                        Contains(std::string(name) + ": the text file holds more than 4.88 KiB (uncompressed)"));
  }
  REQUIRE_THROWS_WITH(datasets::read_file_bytes("/dev/zero", "text file", 1 << 20), Contains("/dev/zero: the text file"));
}

TEST_CASE("the IDX reader refuses wrong magic, wrong sizes, bad labels and damaged gzip, naming the file", "[io][mnist]") {
  test::TempDir dir;
  const std::string images = test::idx_images_bytes(4), labels = test::idx_labels_bytes(4);
  test::write_gzip_bytes(dir.file("swapped.gz"), labels);
  REQUIRE_THROWS_WITH(read_idx_images(dir.file("swapped.gz")),
                      Contains("swapped.gz: not an IDX image file: magic number 2049, expected 2051 (images and labels swapped?)"));
  test::write_gzip_bytes(dir.file("short.gz"), images.substr(0, images.size() - 1));
  REQUIRE_THROWS_WITH(read_idx_images(dir.file("short.gz")),
                      Contains("short.gz: the IDX header promises 4 images, 28 rows, 28 cols (3136 bytes of data) "
                               "but the file has 3135 after its 16-byte header: it is truncated"));
  test::write_gzip_bytes(dir.file("long.gz"), labels + "x");
  REQUIRE_THROWS_WITH(read_idx_labels(dir.file("long.gz")),
                      Contains("long.gz: the IDX header promises 4 labels (4 bytes of data) but the file has 5"));
  test::write_gzip_bytes(dir.file("header.gz"), images.substr(0, 10));
  REQUIRE_THROWS_WITH(read_idx_images(dir.file("header.gz")),
                      Contains("header.gz: too short for an IDX image header (16 bytes), found 10 bytes"));
  std::string huge = images.substr(0, 16);
  for (int k = 4; k < 16; ++k) huge[k] = '\xFF';   // (2^32 - 1)^3 bytes: no overflow, a clear error
  test::write_gzip_bytes(dir.file("huge.gz"), huge);
  REQUIRE_THROWS_WITH(read_idx_images(dir.file("huge.gz")),
                      Contains("4294967295 images, 4294967295 rows, 4294967295 cols (more than 2^64 bytes of data) "
                               "but the file has 0 after its 16-byte header: it is truncated"));
  std::string bad_label = labels;
  bad_label[9] = 10;
  test::write_gzip_bytes(dir.file("label.gz"), bad_label);
  REQUIRE_THROWS_WITH(read_idx_labels(dir.file("label.gz")), Contains("label.gz: label 1 is 10, expected a digit 0-9"));
  REQUIRE_THROWS_AS(read_idx_images(dir.file("none.gz")), IoError);
  REQUIRE_THROWS_WITH(read_idx_images(dir.file("none.gz")), Contains("cannot open MNIST image file '") && Contains("none.gz'"));

  // A gzip stream cut short, even just in its 8-byte trailer, or with a bad CRC, is an error:
  // never a shorter file.
  test::write_gzip_bytes(dir.file("whole.gz"), images);
  const std::string gz = test::slurp(dir.file("whole.gz"));
  for (const size_t cut : {gz.size() / 2, gz.size() - 4}) {
    test::write_text(dir.file("cut.gz"), gz.substr(0, cut));
    REQUIRE_THROWS_AS(read_idx_images(dir.file("cut.gz")), DataError);
    REQUIRE_THROWS_WITH(read_idx_images(dir.file("cut.gz")),
                        Contains("cut.gz: damaged gzip data (") && Contains("unexpected end of file"));
  }
  std::string crc = gz;
  crc[crc.size() - 6] = static_cast<char>(crc[crc.size() - 6] ^ 1);
  test::write_text(dir.file("crc.gz"), crc);
  REQUIRE_THROWS_WITH(read_idx_images(dir.file("crc.gz")), Contains("crc.gz: damaged gzip data ("));
}

TEST_CASE("read_text_lines refuses a truncated gzip file instead of reading fewer lines", "[io][parallel-text]") {
  test::TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i * 7919 % 1000) + "\n";
  test::write_gzip_bytes(dir.file("t.gz"), text);
  CHECK(read_text_lines(dir.file("t.gz")).size() == 2000);
  const std::string gz = test::slurp(dir.file("t.gz"));
  test::write_text(dir.file("cut.gz"), gz.substr(0, gz.size() - 3));
  REQUIRE_THROWS_WITH(read_text_lines(dir.file("cut.gz")), Contains("cut.gz: damaged gzip data"));
}

TEST_CASE("mnist-strips: captions are the digits' labels, boxes their ink, pools disjoint", "[unit][mnist-strips]") {
  test::TempDir dir;
  const MnistDigits mnist = fixture_digits(dir, 60);   // pools: 48 train, 6 valid, 6 test images
  MnistStripsConfig cfg;
  cfg.min_digits = 2;
  cfg.max_digits = 4;
  cfg.height = 34;
  cfg.width = 4 * 28 + 3 * 5 + 7;
  cfg.max_gap = 5;
  const SplitSizes sizes{30, 8, 8};
  const MnistStrips d = make_mnist_strips(mnist, cfg, sizes, 3);
  CHECK(d.splits.train.size() == 30);
  CHECK(d.splits.test.size() == 8);
  check_strips(d, mnist, cfg);
  // Every count of digits occurs.
  std::set<int32_t> lengths(d.splits.train.tgt_len.idata(), d.splits.train.tgt_len.idata() + 30);
  CHECK(lengths == std::set<int32_t>{3, 4, 5});

  // The defaults: 1..5 digits in 32 x 160.
  const MnistStripsConfig defaults;
  const MnistStrips dd = make_mnist_strips(mnist, defaults, {20, 3, 3}, 1);
  check_strips(dd, mnist, defaults);
  CHECK(dd.splits.train.images.shape() == Shape{20, 1, 32, 160});

  // Deterministic by seed; another seed, other strips; a split's stream does not depend on --n.
  CHECK(same_captions(make_mnist_strips(mnist, cfg, sizes, 3).splits, d.splits));
  CHECK(same_bits(make_mnist_strips(mnist, cfg, sizes, 3).mnist_index.test, d.mnist_index.test));
  CHECK(!same_bits(make_mnist_strips(mnist, cfg, sizes, 4).splits.train.images, d.splits.train.images));
  CHECK(same_bits(make_mnist_strips(mnist, cfg, {5, 8, 8}, 3).splits.valid.images, d.splits.valid.images));

  CHECK(digit_words()[7] == "seven");
  CHECK(caption_vocabulary(digit_words()).size() == 14);
}

TEST_CASE("warp_digit: the identity copies, quarter and half turns move every pixel exactly", "[unit][mnist-strips]") {
  constexpr int64_t S = 28;
  std::vector<uint8_t> digit(S * S), out(S * S);
  for (int64_t i = 0; i < S * S; ++i) digit[static_cast<size_t>(i)] = static_cast<uint8_t>((i * 37) % 251);
  const float identity[4] = {1, 0, 0, 1}, quarter[4] = {0, -1, 1, 0};
  warp_digit(digit.data(), S, S, identity, out.data());
  CHECK(out == digit);
  // x' = -y, y' = x about the centre (13.5, 13.5): output (r, c) shows input (27 - c, r).
  warp_digit(digit.data(), S, S, quarter, out.data());
  for (int64_t r = 0; r < S; ++r)
    for (int64_t c = 0; c < S; ++c) REQUIRE(out[static_cast<size_t>(r * S + c)] == digit[static_cast<size_t>((S - 1 - c) * S + r)]);
  const float theta = std::numbers::pi_v<float>, half[4] = {std::cos(theta), -std::sin(theta), std::sin(theta), std::cos(theta)};
  warp_digit(digit.data(), S, S, half, out.data());
  for (int64_t i = 0; i < S * S; ++i) REQUIRE(out[static_cast<size_t>(i)] == digit[static_cast<size_t>(S * S - 1 - i)]);
  // Halved about the centre: the input's ink fits in the middle, the border is 0.
  const float halved[4] = {0.5f, 0, 0, 0.5f};
  std::fill(digit.begin(), digit.end(), uint8_t{255});
  warp_digit(digit.data(), S, S, halved, out.data());
  const Box ink = ink_box(out.data(), S, S, S);
  CHECK(ink.y0 == 7);
  CHECK(ink.y1 == 21);
  CHECK(out[static_cast<size_t>(14 * S + 14)] == 255);
  const float singular[4] = {1, 2, 0.5f, 1};
  CHECK_THROWS_WITH(warp_digit(digit.data(), S, S, singular, out.data()), Contains("must be invertible"));
}

TEST_CASE("warp_digit's displacement moves pixels exactly, and elastic_field is smooth and scales with alpha",
          "[unit][mnist-strips]") {
  constexpr int64_t S = 28;
  std::vector<uint8_t> digit(S * S), out(S * S);
  for (int64_t i = 0; i < S * S; ++i) digit[static_cast<size_t>(i)] = static_cast<uint8_t>((i * 37) % 251);
  // Every pixel samples the input 1 column right and 2 rows up: output (r, c) shows (r - 2, c + 1).
  std::vector<float> field(2 * S * S);
  std::fill(field.begin(), field.begin() + S * S, 1.0f);
  std::fill(field.begin() + S * S, field.end(), -2.0f);
  const float identity[4] = {1, 0, 0, 1};
  warp_digit(digit.data(), S, S, identity, out.data(), field.data());
  for (int64_t r = 0; r < S; ++r)
    for (int64_t c = 0; c < S; ++c)
      REQUIRE(out[static_cast<size_t>(r * S + c)] ==
              (r < 2 || c == S - 1 ? 0 : digit[static_cast<size_t>((r - 2) * S + c + 1)]));

  // Simard et al.'s field, over 50 draws: offsets of about a pixel (alpha 34, sigma 4: a mean of
  // 1.1 pixels in the middle, where the Gaussian sees no border), neighbours alike, and a
  // narrower Gaussian gives a rougher field; exactly twice as far for twice alpha.
  auto mean_abs = [&](float sigma, bool step) {
    Rng rng(5);
    double sum = 0;
    int64_t n = 0;
    for (int draw = 0; draw < 50; ++draw) {
      const std::vector<float> v = elastic_field(S, S, 34, sigma, rng);
      REQUIRE(v.size() == static_cast<size_t>(2 * S * S));
      for (int64_t p = 0; p < 2; ++p)
        for (int64_t r = 12; r < 16; ++r)
          for (int64_t x = 12; x < 16; ++x, ++n) {
            const size_t i = static_cast<size_t>((p * S + r) * S + x);
            sum += std::abs(step ? v[i + 1] - v[i] : v[i]);
          }
    }
    return sum / static_cast<double>(n);
  };
  CHECK(mean_abs(4, false) > 0.8);
  CHECK(mean_abs(4, false) < 1.5);
  CHECK(mean_abs(4, true) < 0.3 * mean_abs(4, false));
  CHECK(mean_abs(1, true) > 0.5 * mean_abs(1, false));
  Rng a(5), b(5);
  const std::vector<float> f = elastic_field(S, S, 34, 4, a), twice = elastic_field(S, S, 68, 4, b);
  for (size_t i = 0; i < f.size(); ++i) REQUIRE(twice[i] == 2 * f[i]);
}

TEST_CASE("mnist-strips' training warps (affine, elastic): digits warped, labels and boxes kept, valid and test untouched",
          "[unit][mnist-strips]") {
  test::TempDir dir;
  const MnistDigits mnist = fixture_digits(dir, 60);
  MnistStripsConfig cfg;
  cfg.train_warp = {15, 0.1f, 0.3f};
  const SplitSizes sizes{40, 8, 8};
  const MnistStrips d = checked_warped_strips(mnist, cfg, sizes);
  // Every training digit is its own warp: its ink differs from its MNIST image's at the same place.
  CHECK(unchanged_training_digits(d, mnist, cfg) == 0);
  CHECK(same_bits(make_mnist_strips(mnist, cfg, sizes, 3).splits.train.images, d.splits.train.images));

  cfg.train_warp.rotate = 91;
  CHECK_THROWS_WITH(check_mnist_strips_config(cfg), Contains("rotation must be in 0..90 degrees, got 91"));
  cfg.train_warp = {0, 0.6f, 0};
  CHECK_THROWS_WITH(check_mnist_strips_config(cfg), Contains("scale must be in 0..0.5, got 0.6"));

  // The elastic distortion alone: again every training digit its own, valid and test untouched.
  cfg.train_warp = {.elastic = 34};
  CHECK(unchanged_training_digits(checked_warped_strips(mnist, cfg, sizes), mnist, cfg) == 0);
  cfg.train_warp.elastic = 101;
  CHECK_THROWS_WITH(check_mnist_strips_config(cfg), Contains("alpha must be in 0..100 pixels, got 101"));
  cfg.train_warp = {.elastic = 34, .elastic_sigma = 0.5f};
  CHECK_THROWS_WITH(check_mnist_strips_config(cfg), Contains("sigma must be in 1..14 pixels, got 0.5"));
}

TEST_CASE("mnist-strips' vertical shift: training digits move up to N rows in their cells, nothing else changes",
          "[unit][mnist-strips]") {
  test::TempDir dir;
  const MnistDigits mnist = fixture_digits(dir, 60);
  MnistStripsConfig cfg;
  cfg.train_warp.shift_y = 4;
  const MnistStrips d = checked_warped_strips(mnist, cfg, {40, 8, 8});
  // A whole-row shift keeps the digit's ink (unless it leaves the cell) and moves its box by the
  // shift plus the strip's jitter: from -4 to 4 + (32 - 28) rows against MNIST's own ink box,
  // outside the jitter's 0..4 for some digits.
  int64_t kept = 0, digits = 0, outside_jitter = 0;
  for_each_training_digit(d, mnist, cfg, [&](const Box& box, int32_t src, bool same) {
    ++digits;
    if (!same) return;
    ++kept;
    const int64_t offset = box.y0 - ink_box(mnist.images.image(src), 28, 28, 28).y0;
    CHECK(offset >= -4);
    CHECK(offset <= 8);
    outside_jitter += offset < 0 || offset > 4;
  });
  CHECK(kept * 10 >= digits * 9);
  CHECK(outside_jitter > 0);
  cfg.train_warp.shift_y = 9;
  CHECK_THROWS_WITH(check_mnist_strips_config(cfg), Contains("vertical shift must be in 0..8 rows, got 9"));
}

TEST_CASE("mnist-strips refuses options that do not fit and pools too small", "[unit][mnist-strips]") {
  MnistStripsConfig cfg;
  cfg.width = 150;
  REQUIRE_THROWS_AS(check_mnist_strips_config(cfg), ConfigError);
  REQUIRE_THROWS_WITH(check_mnist_strips_config(cfg),
                      Contains("width 150 cannot hold max_digits 5 digits 28 pixels wide with gaps of up to max_gap 4: "
                               "that needs 156 (5 x 28 + 4 x 4)"));
  cfg = {};
  cfg.height = 27;
  REQUIRE_THROWS_WITH(check_mnist_strips_config(cfg), Contains("height 27 is less than the digits' 28 rows"));
  cfg = {};
  cfg.min_digits = 3;
  cfg.max_digits = 2;
  REQUIRE_THROWS_WITH(check_mnist_strips_config(cfg), Contains("max_digits (2) must be >= min_digits (3)"));
  CHECK_NOTHROW(check_mnist_strips_config(MnistStripsConfig{}));

  test::TempDir dir;
  const MnistDigits mnist = fixture_digits(dir, 40);   // 4 valid images: fewer than 5 digits
  REQUIRE_THROWS_AS(make_mnist_strips(mnist, MnistStripsConfig{}, {2, 2, 2}, 1), DataError);
  REQUIRE_THROWS_WITH(make_mnist_strips(mnist, MnistStripsConfig{}, {2, 2, 2}, 1),
                      Contains("the valid pool has 4 MNIST images (of 40), fewer than max_digits 5"));
  CHECK_NOTHROW(make_mnist_strips(mnist, MnistStripsConfig{}, {2, 0, 0}, 1));

  test::write_gzip_bytes(dir.file("t10k-labels-idx1-ubyte.gz"), test::idx_labels_bytes(39));
  REQUIRE_THROWS_WITH(read_mnist(dir.path().string()), Contains("has 40 images but") && Contains("has 39 labels"));
}

TEST_CASE("mnist-strips from the real MNIST test set", "[data][mnist-strips]") {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "mnist" / kMnistImagesFile)) {
    test::skip_test("the MNIST data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return;
  }
  const MnistDigits mnist = read_mnist((root / "mnist").string());
  CHECK(mnist.images.count == 10000);
  CHECK(mnist.images.rows == 28);
  CHECK(mnist.images.cols == 28);
  CHECK(mnist.labels[0] == 7);   // the first test digits are 7 2 1 0 4
  CHECK(mnist.labels[1] == 2);
  CHECK(mnist.labels[4] == 4);
  const MnistStripsConfig cfg;
  check_strips(make_mnist_strips(mnist, cfg, {40, 10, 10}, 1), mnist, cfg);
}

TEST_CASE("shapes: captions name two objects in (colour, shape) order, whose boxes hold their pixels and show the relation",
          "[unit][shapes]") {
  const std::vector<std::string> vocab = caption_vocabulary(shapes_words());
  const auto word = [&](int32_t id) { return vocab.at(static_cast<size_t>(id)); };
  const ShapesConfig cfg;
  const Splits<CaptionSplit> d = make_shapes(cfg, {60, 10, 10}, 5);
  std::set<std::string> relations;
  for (int k = 0; k < 3; ++k) {
    const CaptionSplit& s = d[k];
    REQUIRE(s.images.shape() == Shape{s.size(), 3, 48, 48});
    REQUIRE(s.tgt.shape() == Shape{s.size(), 9});
    REQUIRE(s.boxes.shape() == Shape{s.size(), 9, 4});
    for (int64_t i = 0; i < s.size(); ++i) {
      const Caption c = caption(s, i);
      std::vector<std::string> w;
      for (int32_t id : c.words) w.push_back(word(id));
      REQUIRE((w.size() == 7 || w.size() == 8));
      const size_t b_at = w.size() - 3;   // "a" of the second object
      // Structure: a COLOUR SHAPE REL... a COLOUR SHAPE; boxes on colour and shape words only.
      CHECK(w[0] == "a");
      CHECK(w[b_at] == "a");
      std::string rel = w[3];
      if (w.size() == 8) {
        CHECK(w[4] == "of");
        rel += " of";
      }
      relations.insert(rel);
      for (size_t t = 0; t < w.size(); ++t) {
        const bool names = t == 1 || t == 2 || t == b_at + 1 || t == b_at + 2;
        CHECK(no_box(c.boxes[t]) == !names);
      }
      const Box a = c.boxes[1], b = c.boxes[b_at + 1];
      CHECK((a.y0 == c.boxes[2].y0 && a.x0 == c.boxes[2].x0 && a.y1 == c.boxes[2].y1 && a.x1 == c.boxes[2].x1));
      CHECK((b.y0 == c.boxes[b_at + 2].y0 && b.x1 == c.boxes[b_at + 2].x1));
      // Two distinct objects, the one earlier in (colour, shape) order named first: one caption
      // per scene (the word ids follow that order).
      CHECK(std::pair{c.words[1], c.words[2]} < std::pair{c.words[b_at + 1], c.words[b_at + 2]});

      // Pixels: each box is tight around non-zero pixels of its colour; nothing outside them.
      const int64_t H = 48, W = 48;
      const std::vector<float> p = plane(s, i);
      check_tight(p, H, W, a);
      check_tight(p, H, W, b);
      const auto channel = [&](int ch, int64_t y, int64_t x) { return s.images.data()[((i * 3 + ch) * H + y) * W + x]; };
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const bool in_a = inside(a, y, x), in_b = inside(b, y, x);
          REQUIRE(!(in_a && in_b));
          if (!in_a && !in_b) {
            REQUIRE(p[static_cast<size_t>(y * W + x)] == 0.0f);
            continue;
          }
          const std::string& colour = in_a ? w[1] : w[b_at + 1];
          const float r = channel(0, y, x), g = channel(1, y, x), bl = channel(2, y, x);
          const float v = std::max({r, g, bl});
          REQUIRE(v <= 1.0f);
          if (colour == "red") CHECK((g == 0 && bl == 0));
          if (colour == "green") CHECK((r == 0 && bl == 0));
          if (colour == "blue") CHECK((r == 0 && g == 0));
          if (colour == "yellow") CHECK((r == g && bl == 0));
        }
      // A square fills its box.
      for (const auto& [shape_word, box] : {std::pair{w[2], a}, std::pair{w[b_at + 2], b}})
        if (shape_word == "square")
          for (int64_t y = box.y0; y < box.y1; ++y)
            for (int64_t x = box.x0; x < box.x1; ++x) REQUIRE(p[static_cast<size_t>(y * W + x)] > 0.99f);

      // The relation rule of shapes.hpp, on the stored boxes.
      const int64_t dy = (b.y0 + b.y1) - (a.y0 + a.y1), dx = (b.x0 + b.x1) - (a.x0 + a.x1);
      if (rel == "above") CHECK((a.y1 <= b.y0 && std::abs(dy) >= 2 * std::abs(dx)));
      else if (rel == "below") CHECK((b.y1 <= a.y0 && std::abs(dy) >= 2 * std::abs(dx)));
      else if (rel == "left of") CHECK((a.x1 <= b.x0 && std::abs(dx) >= 2 * std::abs(dy)));
      else if (rel == "right of") CHECK((b.x1 <= a.x0 && std::abs(dx) >= 2 * std::abs(dy)));
      else FAIL("unknown relation '" << rel << "'");
    }
  }
  CHECK(relations == std::set<std::string>{"above", "below", "left of", "right of"});

  // No image in two splits; deterministic by seed; a split's stream independent of --n.
  std::set<uint64_t> seen[3];
  for (int k = 0; k < 3; ++k)
    for (int64_t i = 0; i < d[k].size(); ++i)
      seen[k].insert(hash_bytes(d[k].images.data() + i * 3 * 48 * 48, 3 * 48 * 48 * sizeof(float), 0));
  for (uint64_t h : seen[1]) CHECK(!seen[0].count(h));
  for (uint64_t h : seen[2]) CHECK((!seen[0].count(h) && !seen[1].count(h)));
  CHECK(same_captions(make_shapes(cfg, {60, 10, 10}, 5), d));
  CHECK(!same_bits(make_shapes(cfg, {60, 10, 10}, 6).train.images, d.train.images));
  CHECK(same_bits(make_shapes(cfg, {7, 10, 10}, 5).train.tgt.rows(0, 7), d.train.tgt.rows(0, 7)));
}

TEST_CASE("shapes refuses sizes that do not fit", "[unit][shapes]") {
  ShapesConfig cfg;
  cfg.max_size = 25;
  REQUIRE_THROWS_AS(make_shapes(cfg, {1, 1, 1}, 1), ConfigError);
  REQUIRE_THROWS_WITH(make_shapes(cfg, {1, 1, 1}, 1),
                      Contains("two objects of max_size 25 must fit side by side and one above the other: "
                               "height and width must be >= 50, got 48 x 48"));
  cfg = {};
  cfg.min_size = 3;
  REQUIRE_THROWS_WITH(make_shapes(cfg, {1, 1, 1}, 1), Contains("min_size must be >= 4, got 3"));
  cfg = {};
  cfg.min_size = 12;
  cfg.max_size = 11;
  REQUIRE_THROWS_WITH(make_shapes(cfg, {1, 1, 1}, 1), Contains("max_size (11) must be >= min_size (12)"));
}

TEST_CASE("write_mnist_strips and write_shapes store the caption layout", "[io][captions]") {
  test::TempDir dir;
  const MnistDigits mnist = fixture_digits(dir, 60);
  const MnistStrips strips = make_mnist_strips(mnist, MnistStripsConfig{}, {3, 2, 2}, 1);
  {
    io::File f = io::File::create(dir.file("m.h5"));
    write_mnist_strips(f, strips);
    f.commit();
  }
  const io::File m = io::File::open_read(dir.file("m.h5"));
  CHECK(m.type_name("/train/images") == "float32");
  CHECK(m.shape("/train/images") == Shape{3, 1, 32, 160});
  CHECK(m.type_name("/valid/tgt") == "int32");
  CHECK(m.shape("/valid/tgt") == Shape{2, 6});
  CHECK(m.shape("/test/tgt_len") == Shape{2});
  CHECK(m.shape("/test/boxes") == Shape{2, 6, 4});
  CHECK(m.shape("/test/mnist_index") == Shape{2, 5});
  CHECK(same_bits(m.read("/test/boxes"), strips.splits.test.boxes));
  CHECK(same_bits(m.read("/train/images"), strips.splits.train.images));
  CHECK(m.read_strings("/vocab/tgt") == caption_vocabulary(digit_words()));

  const Splits<CaptionSplit> shapes = make_shapes(ShapesConfig{}, {3, 2, 2}, 1);
  {
    io::File f = io::File::create(dir.file("s.h5"));
    write_shapes(f, shapes);
    f.commit();
  }
  const io::File s = io::File::open_read(dir.file("s.h5"));
  CHECK(s.shape("/train/images") == Shape{3, 3, 48, 48});
  CHECK(s.shape("/train/boxes") == Shape{3, 9, 4});
  CHECK(!s.exists("/train/mnist_index"));
  CHECK(s.read_strings("/vocab/tgt") ==
        std::vector<std::string>{"<pad>", "<s>", "</s>", "<unk>", "a", "above", "below", "left", "right", "of",
                                 "red", "green", "blue", "yellow", "circle", "square", "triangle"});
}

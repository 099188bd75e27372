// mnist-strips: composing digit strips and their captions (see mnist_strips.hpp).
#include "attn/datasets/mnist_strips.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "attn/core/rng.hpp"
#include "attn/data/vocab.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {
namespace {

std::string str(int64_t v) { return std::to_string(v); }
std::string str(float v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// A draw of `warp` as the matrix warp_digit takes: scale x rotation x shear.
void draw_warp(const DigitWarp& warp, Rng& rng, float a[4]) {
  const float theta = rng.uniform(-warp.rotate, warp.rotate) * (std::numbers::pi_v<float> / 180);
  const float s = rng.uniform(1 - warp.scale, 1 + warp.scale), h = rng.uniform(-warp.shear, warp.shear);
  const float c = s * std::cos(theta), n = s * std::sin(theta);
  a[0] = c, a[1] = c * h - n, a[2] = n, a[3] = n * h + c;
}

// Moves the rows x cols image in `buf` down by dy rows (up for dy < 0), filling with 0.
void shift_rows(std::vector<uint8_t>& buf, int64_t rows, int64_t cols, int64_t dy) {
  std::vector<uint8_t> out(buf.size(), 0);
  for (int64_t r = std::max<int64_t>(0, dy); r < std::min(rows, rows + dy); ++r)
    std::copy_n(buf.begin() + (r - dy) * cols, cols, out.begin() + r * cols);
  buf.swap(out);
}

}  // namespace

void warp_digit(const uint8_t* digit, int64_t rows, int64_t cols, const float a[4], uint8_t* out,
                const float* displacement) {
  const float det = a[0] * a[3] - a[1] * a[2];
  if (!(std::abs(det) > 1e-6f)) throw ConfigError("mnist-strips: a digit warp must be invertible");
  const float i0 = a[3] / det, i1 = -a[1] / det, i2 = -a[2] / det, i3 = a[0] / det;   // the inverse
  const float cy = static_cast<float>(rows - 1) / 2, cx = static_cast<float>(cols - 1) / 2;
  auto at = [&](int64_t r, int64_t c) -> float {
    return r < 0 || r >= rows || c < 0 || c >= cols ? 0.0f : static_cast<float>(digit[r * cols + c]);
  };
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float dx = static_cast<float>(c) - cx, dy = static_cast<float>(r) - cy;
      float x = i0 * dx + i1 * dy + cx, y = i2 * dx + i3 * dy + cy;
      if (displacement) x += displacement[r * cols + c], y += displacement[(rows + r) * cols + c];
      const float fx = std::floor(x), fy = std::floor(y), wx = x - fx, wy = y - fy;
      const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
      const float v = (1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x0 + 1)) +
                      wy * ((1 - wx) * at(y0 + 1, x0) + wx * at(y0 + 1, x0 + 1));
      out[r * cols + c] = static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 255.0f)));
    }
}

std::vector<float> elastic_field(int64_t rows, int64_t cols, float alpha, float sigma, Rng& rng) {
  const int64_t radius = static_cast<int64_t>(std::ceil(3 * sigma));
  std::vector<float> kernel(static_cast<size_t>(2 * radius + 1));
  float total = 0;
  for (int64_t k = -radius; k <= radius; ++k)
    total += kernel[static_cast<size_t>(k + radius)] = std::exp(-0.5f * static_cast<float>(k * k) / (sigma * sigma));
  for (float& w : kernel) w /= total;
  const int64_t n = rows * cols;
  std::vector<float> field(static_cast<size_t>(2 * n)), rowpass(static_cast<size_t>(n));
  rng.fill_uniform(field, -1, 1);
  for (int64_t plane = 0; plane < 2; ++plane) {   // separable: along rows, then along columns
    float* f = field.data() + plane * n;
    std::fill(rowpass.begin(), rowpass.end(), 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t k = std::max(-radius, -c); k <= std::min(radius, cols - 1 - c); ++k)
          rowpass[static_cast<size_t>(r * cols + c)] += kernel[static_cast<size_t>(k + radius)] * f[r * cols + c + k];
    std::fill(f, f + n, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = std::max(-radius, -r); k <= std::min(radius, rows - 1 - r); ++k)
        for (int64_t c = 0; c < cols; ++c)
          f[r * cols + c] += kernel[static_cast<size_t>(k + radius)] * rowpass[static_cast<size_t>((r + k) * cols + c)];
  }
  for (float& v : field) v *= alpha;
  return field;
}

void check_mnist_strips_config(const MnistStripsConfig& cfg, int64_t rows, int64_t cols) {
  const std::string task = "mnist-strips: ";
  if (cfg.min_digits < 1) throw ConfigError(task + "min_digits must be >= 1, got " + str(cfg.min_digits));
  if (cfg.max_digits < cfg.min_digits)
    throw ConfigError(task + "max_digits (" + str(cfg.max_digits) + ") must be >= min_digits (" +
                      str(cfg.min_digits) + ")");
  if (cfg.max_gap < 0) throw ConfigError(task + "max_gap must be >= 0, got " + str(cfg.max_gap));
  const DigitWarp& w = cfg.train_warp;
  if (!(w.rotate >= 0 && w.rotate <= 90))
    throw ConfigError(task + "the warp's rotation must be in 0..90 degrees, got " + str(w.rotate));
  if (!(w.scale >= 0 && w.scale <= 0.5))
    throw ConfigError(task + "the warp's scale must be in 0..0.5, got " + str(w.scale));
  if (!(w.shear >= 0 && w.shear <= 1))
    throw ConfigError(task + "the warp's shear must be in 0..1, got " + str(w.shear));
  if (!(w.shift_y >= 0 && w.shift_y <= 8))
    throw ConfigError(task + "the warp's vertical shift must be in 0..8 rows, got " + str(w.shift_y));
  if (!(w.elastic >= 0 && w.elastic <= 100))
    throw ConfigError(task + "the elastic distortion's alpha must be in 0..100 pixels, got " + str(w.elastic));
  if (!(w.elastic_sigma >= 1 && w.elastic_sigma <= 14))
    throw ConfigError(task + "the elastic distortion's sigma must be in 1..14 pixels, got " + str(w.elastic_sigma));
  if (cfg.height < rows)
    throw ConfigError(task + "height " + str(cfg.height) + " is less than the digits' " + str(rows) + " rows");
  const int64_t need = cfg.max_digits * cols + (cfg.max_digits - 1) * cfg.max_gap;
  if (cfg.width < need)
    throw ConfigError(task + "width " + str(cfg.width) + " cannot hold max_digits " + str(cfg.max_digits) +
                      " digits " + str(cols) + " pixels wide with gaps of up to max_gap " + str(cfg.max_gap) +
                      ": that needs " + str(need) + " (" + str(cfg.max_digits) + " x " + str(cols) + " + " +
                      str(cfg.max_digits - 1) + " x " + str(cfg.max_gap) + ")");
}

MnistDigits read_mnist(const std::string& dir) {
  const std::string images_path = dir + "/" + kMnistImagesFile, labels_path = dir + "/" + kMnistLabelsFile;
  MnistDigits out{read_idx_images(images_path), read_idx_labels(labels_path)};
  if (static_cast<int64_t>(out.labels.size()) != out.images.count)
    throw DataError("MNIST: '" + images_path + "' has " + str(out.images.count) + " images but '" + labels_path +
                    "' has " + str(static_cast<int64_t>(out.labels.size())) + " labels");
  return out;
}

int mnist_pool(int64_t i) {
  const int64_t r = i % 10;
  return r < 8 ? 0 : r == 8 ? 1 : 2;
}

std::vector<std::string> digit_words() {
  return {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
}

MnistStrips make_mnist_strips(const MnistDigits& mnist, const MnistStripsConfig& cfg, const SplitSizes& sizes,
                              uint64_t seed) {
  check_sizes("mnist-strips", sizes);
  const IdxImages& im = mnist.images;
  check_mnist_strips_config(cfg, im.rows, im.cols);

  std::vector<int64_t> pools[3];
  for (int64_t i = 0; i < im.count; ++i) pools[mnist_pool(i)].push_back(i);
  std::vector<Box> ink;   // each MNIST image's ink box
  for (int64_t i = 0; i < im.count; ++i) ink.push_back(ink_box(im.image(i), im.rows, im.cols, im.cols));

  const int64_t n[3] = {sizes.train, sizes.valid, sizes.test};
  const int64_t K = cfg.max_digits, H = cfg.height, W = cfg.width, DH = im.rows, DW = im.cols;
  const Rng root(seed);
  MnistStrips out;
  for (int k = 0; k < 3; ++k) {
    const std::vector<int64_t>& pool = pools[k];
    if (n[k] > 0 && static_cast<int64_t>(pool.size()) < K)
      throw DataError("mnist-strips: the " + std::string(kSplitNames[k]) + " pool has " +
                      str(static_cast<int64_t>(pool.size())) + " MNIST images (of " + str(im.count) +
                      "), fewer than max_digits " + str(K) + "; a strip's digits are distinct images");
    Rng rng = root.fork(static_cast<uint64_t>(k));
    const bool warp = k == 0 && cfg.train_warp.any();
    std::vector<uint8_t> warped(warp ? static_cast<size_t>(DH * DW) : 0);   // the digit being placed
    CaptionSplit s(kSplitNames[k], n[k], 1, H, W, K + 1);
    Tensor index({n[k], K}, DType::i32);
    std::fill(index.idata(), index.idata() + index.numel(), -1);
    for (int64_t e = 0; e < n[k]; ++e) {
      const int64_t digits = cfg.min_digits + rng.uniform_int(cfg.max_digits - cfg.min_digits + 1);
      std::vector<int64_t> chosen;
      while (static_cast<int64_t>(chosen.size()) < digits) {
        const int64_t i = pool[static_cast<size_t>(rng.uniform_int(static_cast<int64_t>(pool.size())))];
        if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) chosen.push_back(i);
      }
      std::vector<int64_t> gap(static_cast<size_t>(digits), 0);   // gap[d]: pixels before digit d (d > 0)
      int64_t span = digits * DW;
      for (int64_t d = 1; d < digits; ++d) span += gap[static_cast<size_t>(d)] = rng.uniform_int(cfg.max_gap + 1);
      int64_t x = rng.uniform_int(W - span + 1);

      float* image = s.images.data() + e * H * W;
      std::vector<Box> boxes(static_cast<size_t>(digits));
      std::vector<int32_t> words;
      for (int64_t d = 0; d < digits; ++d) {
        const int64_t i = chosen[static_cast<size_t>(d)];
        x += gap[static_cast<size_t>(d)];
        const int64_t y = rng.uniform_int(H - DH + 1);
        const uint8_t* digit = im.image(i);
        Box box = ink[static_cast<size_t>(i)];
        if (warp) {
          float a[4];
          draw_warp(cfg.train_warp, rng, a);
          const std::vector<float> field = cfg.train_warp.elastic > 0
              ? elastic_field(DH, DW, cfg.train_warp.elastic, cfg.train_warp.elastic_sigma, rng)
              : std::vector<float>{};
          warp_digit(digit, DH, DW, a, warped.data(), field.empty() ? nullptr : field.data());
          if (cfg.train_warp.shift_y > 0)
            shift_rows(warped, DH, DW, rng.uniform_int(2 * cfg.train_warp.shift_y + 1) - cfg.train_warp.shift_y);
          digit = warped.data();
          box = ink_box(digit, DH, DW, DW);
        }
        for (int64_t r = 0; r < DH; ++r)
          for (int64_t c = 0; c < DW; ++c)
            image[(y + r) * W + x + c] = static_cast<float>(digit[r * DW + c]) / 255.0f;
        boxes[static_cast<size_t>(d)] = box.at(y, x);
        words.push_back(data::kNumReserved + mnist.labels[static_cast<size_t>(i)]);
        index.idata()[e * K + d] = static_cast<int32_t>(i);
        x += DW;
      }
      std::vector<const Box*> word_boxes;
      for (const Box& b : boxes) word_boxes.push_back(&b);
      s.set_caption(e, words, word_boxes);
    }
    out.splits[k] = std::move(s);
    out.mnist_index[k] = index;
  }
  return out;
}

void write_mnist_strips(io::File& file, const MnistStrips& data) {
  write_captions(file, data.splits, caption_vocabulary(digit_words()));
  for (int k = 0; k < 3; ++k) file.write(std::string("/") + kSplitNames[k] + "/mnist_index", data.mnist_index[k]);
}

}  // namespace attn::datasets

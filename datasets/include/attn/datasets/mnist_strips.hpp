// mnist-strips: images of k handwritten MNIST digits side by side, captioned with the digits'
// words ("seven two nine"), left to right. A captioner must find each digit in turn: the box
// of the digit a word names is stored with the word (captions.hpp), so attention can be scored.
//
// Composition of one example (datasets/README.md, "mnist-strips"): k ~ U{min_digits..
// max_digits}; k distinct MNIST images drawn uniformly from the split's pool; gaps between
// neighbours ~ U{0..max_gap} pixels each; the row of digits starts at a column ~ U{0..W -
// its width}; each digit's top row ~ U{0..H - 28} on its own (vertical jitter). Digits are
// copied unscaled (pixel / 255; training digits warped first when train_warp asks) into
// disjoint 28 x 28 cells, so nothing overlaps or leaves the image. A word's box is the tight
// box of its digit's ink (pixels > 0), not the 28 x 28 cell.
//
// Pools: MNIST image i (of the file's n) is in the train pool when i mod 10 < 8, the valid pool
// when i mod 10 = 8 and the test pool when i mod 10 = 9: disjoint, the same for every seed
// (so any two files' train and test never share a digit image), and spread over the whole file
// (MNIST's first 5,000 test images come from NIST's training set and are cleaner than the
// last 5,000, so contiguous ranges would give the splits different difficulty).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/datasets/captions.hpp"
#include "attn/datasets/idx.hpp"
#include "attn/datasets/splits.hpp"

namespace attn::datasets {

inline constexpr const char* kMnistImagesFile = "t10k-images-idx3-ubyte.gz";
inline constexpr const char* kMnistLabelsFile = "t10k-labels-idx1-ubyte.gz";

// A random affine warp of a digit about its cell's centre, drawn for every placement: rotation
// uniform in +-rotate degrees, scale in 1 +- scale, horizontal shear in +-shear (x += shear y);
// with elastic > 0, an elastic distortion on top (Simard et al. 2003: each pixel samples the
// input elastic_field(elastic, elastic_sigma) pixels away from where the affine map puts it);
// then a vertical shift of the result within its cell by a whole number of rows uniform in
// +-shift_y (ink pushed out of the cell is cut off). All 0: no warp, and no random draws (the
// strips of a seed stay those of earlier versions; shift_y 0 and elastic 0 draw nothing).
struct DigitWarp {
  float rotate = 0, scale = 0, shear = 0;
  int64_t shift_y = 0;
  float elastic = 0, elastic_sigma = 4;   // Simard et al.'s alpha and sigma, in pixels
  bool any() const { return rotate != 0 || scale != 0 || shear != 0 || shift_y != 0 || elastic != 0; }
};

struct MnistStripsConfig {
  int64_t min_digits = 1;
  int64_t max_digits = 5;
  int64_t height = 32;    // >= the digits' rows (28)
  int64_t width = 160;    // >= max_digits * 28 + (max_digits - 1) * max_gap
  int64_t max_gap = 4;    // pixels between neighbouring 28 x 28 cells, at most
  // Training strips only (augmentation: the train pool holds 8,000 digit images, and a strip
  // made of them repeats digits the model has seen; valid and test keep MNIST's own digits).
  DigitWarp train_warp;
};

struct MnistDigits {
  IdxImages images;
  std::vector<uint8_t> labels;
};

// Reads dir/t10k-images-idx3-ubyte.gz and dir/t10k-labels-idx1-ubyte.gz (idx.hpp) and checks
// that they hold as many images as labels (DataError naming both files otherwise).
MnistDigits read_mnist(const std::string& dir);

// The pool (0 train, 1 valid, 2 test) of MNIST image i, as above.
int mnist_pool(int64_t i);

struct MnistStrips {
  Splits<CaptionSplit> splits;     // C = 1, T = max_digits + 1
  Splits<Tensor> mnist_index;      // [N, max_digits] i32: the MNIST image of each digit, -1 padded
};

// Throws ConfigError when the options are inconsistent or max_digits digits of rows x cols
// pixels with the largest gaps do not fit (the message gives the width needed).
inline constexpr int64_t kMnistSide = 28;
void check_mnist_strips_config(const MnistStripsConfig& cfg, int64_t rows = kMnistSide, int64_t cols = kMnistSide);

// Writes into `out` (rows x cols) the image `digit` moved by the affine map `a` (x' = a[0] x +
// a[1] y, y' = a[2] x + a[3] y about the image's centre): each output pixel is the bilinear
// sample of the input at the inverse map of its centre, 0 outside the input, rounded. With a
// `displacement` (rows x cols x-offsets, then as many y-offsets), output pixel p samples the
// input at that inverse map plus displacement(p).
void warp_digit(const uint8_t* digit, int64_t rows, int64_t cols, const float a[4], uint8_t* out,
                const float* displacement = nullptr);

// An elastic displacement field (Simard et al. 2003) for warp_digit: x- and y-offsets each
// uniform in [-1, 1) per pixel, smoothed by a Gaussian of standard deviation `sigma` pixels
// (truncated at 3 sigma, 0 outside the image) and multiplied by `alpha`; 2 x rows x cols values.
std::vector<float> elastic_field(int64_t rows, int64_t cols, float alpha, float sigma, Rng& rng);

// "zero" .. "nine" (ids 4..13 in the vocabulary).
std::vector<std::string> digit_words();

// Throws ConfigError as check_mnist_strips_config (with the file's digit size), DataError when
// a pool has fewer images than max_digits.
// Split k draws from Rng(seed).fork(k).
MnistStrips make_mnist_strips(const MnistDigits& mnist, const MnistStripsConfig& cfg, const SplitSizes& sizes,
                              uint64_t seed);

// write_captions plus /<split>/mnist_index.
void write_mnist_strips(io::File& file, const MnistStrips& data);

}  // namespace attn::datasets

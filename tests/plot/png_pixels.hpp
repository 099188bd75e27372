// Test helper: decodes a PNG (bytes or file) with cairo and reads pixel colours, so the plot
// tests can check where values were drawn.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/plot/color.hpp"

namespace attn::test {

struct Rgb8 {
  int r = 0, g = 0, b = 0;
  bool operator==(const Rgb8&) const = default;
};

// A colour rounded to 8 bits as cairo stores it.
Rgb8 to_rgb8(const plot::Rgb& c);
// Each channel within tol of the other's.
bool near(const Rgb8& a, const Rgb8& b, int tol = 1);
std::string describe(const Rgb8& c);

class PngPixels {
 public:
  static PngPixels decode(const std::string& bytes);   // REQUIREs a valid PNG
  static PngPixels load(const std::string& path);
  int width() const { return width_; }
  int height() const { return height_; }
  Rgb8 at(double x, double y) const;                   // the pixel containing point (x, y)

 private:
  int width_ = 0, height_ = 0;
  std::vector<uint32_t> px_;   // 0x00RRGGBB, row-major
};

}  // namespace attn::test

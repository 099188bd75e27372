// Decoding PNGs for the plot tests with cairo's own PNG reader.
#include "png_pixels.hpp"

#include <cairo.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace attn::test {

namespace {
struct Reader {
  const std::string* bytes;
  size_t pos = 0;
};
cairo_status_t read_chunk(void* closure, unsigned char* data, unsigned int length) {
  auto* r = static_cast<Reader*>(closure);
  if (r->pos + length > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
  std::memcpy(data, r->bytes->data() + r->pos, length);
  r->pos += length;
  return CAIRO_STATUS_SUCCESS;
}
}  // namespace

Rgb8 to_rgb8(const plot::Rgb& c) {
  return {static_cast<int>(std::lround(c.r * 255)), static_cast<int>(std::lround(c.g * 255)),
          static_cast<int>(std::lround(c.b * 255))};
}

bool near(const Rgb8& a, const Rgb8& b, int tol) {
  return std::abs(a.r - b.r) <= tol && std::abs(a.g - b.g) <= tol && std::abs(a.b - b.b) <= tol;
}

std::string describe(const Rgb8& c) {
  std::ostringstream os;
  os << "rgb(" << c.r << ", " << c.g << ", " << c.b << ")";
  return os.str();
}

PngPixels PngPixels::decode(const std::string& bytes) {
  Reader reader{&bytes};
  cairo_surface_t* s = cairo_image_surface_create_from_png_stream(read_chunk, &reader);
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  cairo_surface_flush(s);
  PngPixels out;
  out.width_ = cairo_image_surface_get_width(s);
  out.height_ = cairo_image_surface_get_height(s);
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  out.px_.resize(static_cast<size_t>(out.width_) * static_cast<size_t>(out.height_));
  for (int y = 0; y < out.height_; ++y)
    std::memcpy(&out.px_[static_cast<size_t>(y) * static_cast<size_t>(out.width_)], data + y * stride,
                static_cast<size_t>(out.width_) * 4);
  cairo_surface_destroy(s);
  return out;
}

PngPixels PngPixels::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return decode(ss.str());
}

Rgb8 PngPixels::at(double x, double y) const {
  const int ix = static_cast<int>(std::floor(x)), iy = static_cast<int>(std::floor(y));
  if (ix < 0 || iy < 0 || ix >= width_ || iy >= height_)
    FAIL("pixel (" << x << ", " << y << ") is outside the " << width_ << " x " << height_ << " picture");
  const uint32_t p = px_[static_cast<size_t>(iy) * static_cast<size_t>(width_) + static_cast<size_t>(ix)];
  return {static_cast<int>((p >> 16) & 0xFF), static_cast<int>((p >> 8) & 0xFF), static_cast<int>(p & 0xFF)};
}

}  // namespace attn::test

// Picture: a finished figure, held as vector drawing operations and written as PNG, SVG or PDF.
//
// Every chart function (heatmap, weights, overlay, curve, table) returns a Picture. It keeps
// the drawing as a cairo recording, so SVG and PDF stay vector (text as text outlines, lines as
// paths) and PNG is rasterised at any scale. The picture also lists the rectangles of its data
// panels (the cell grid of a heatmap, the plot area of a curve, ...) in picture units, so tests
// and callers can find where a value was drawn. One unit is one PNG pixel at scale 1, one CSS
// pixel in SVG and one point (1/72 inch) in PDF.
//
// save() writes through io::write_bytes (io/output_file.hpp): atomically over a regular file (a
// temporary file in the target's folder renamed over it, so a failure never leaves a partial
// image or damages an older one), streamed to "-" or a character device, refused for a FIFO or
// folder (ConfigError).
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace attn::plot {

enum class Format { png, svg, pdf };

// From the file extension (.png, .svg, .pdf, any case); otherwise ConfigError.
Format format_for_path(const std::string& path);
Format format_from_name(const std::string& name);   // "png", "svg", "pdf"
const char* format_name(Format format);

struct Rect {
  double x = 0, y = 0, w = 0, h = 0;
  double right() const { return x + w; }
  double bottom() const { return y + h; }
};

class Picture {
 public:
  double width() const;                  // in units, whole numbers
  double height() const;
  // The data panels in drawing order; each chart's header says what they are.
  const std::vector<Rect>& panels() const;

  // The encoded file. `scale` is PNG pixels per unit (ignored for SVG and PDF).
  std::string encode(Format format, double scale = 1.0) const;
  // Writes atomically (see above); "-" writes to standard output. Throws IoError.
  void save(const std::string& path, Format format, double scale = 1.0) const;
  void save(const std::string& path) const { save(path, format_for_path(path)); }

  struct Impl;                           // defined by the drawing code (src/canvas.hpp)
  explicit Picture(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace attn::plot

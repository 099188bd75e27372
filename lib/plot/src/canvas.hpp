// Canvas: the one layer over cairo that every chart draws through (internal to attn_plot).
//
// A Canvas owns an unbounded cairo recording surface: a chart measures its labels on it, lays
// the figure out, draws, and calls finish() with the final size to get a Picture. Text is
// measured and drawn with the same font options (no hinting of metrics), so a label measured
// here takes exactly the room it was given in PNG, SVG and PDF alike. The house style (fonts,
// sizes, greys) lives here so all charts look alike.
#pragma once
#include <cairo.h>

#include <string>
#include <vector>

#include "attn/plot/color.hpp"
#include "attn/plot/picture.hpp"

namespace attn::plot {

struct Picture::Impl {
  cairo_surface_t* recording = nullptr;   // owned
  double width = 0, height = 0;
  std::vector<Rect> panels;
  ~Impl();
};

namespace style {
inline constexpr double kMargin = 12;        // around the figure
inline constexpr double kLabelSize = 11;     // tick and token labels
inline constexpr double kTitleSize = 14;     // the figure's title
inline constexpr double kAxisTitleSize = 12;
inline constexpr double kPad = 5;            // between a label and what it labels
inline constexpr Rgb kText{0.13, 0.13, 0.13};
inline constexpr Rgb kAxis{0.25, 0.25, 0.25};
inline constexpr Rgb kGrid{0.90, 0.90, 0.90};
inline constexpr Rgb kMissing{0.82, 0.82, 0.82};   // NaN cells
inline constexpr Rgb kWhite{1, 1, 1};
}  // namespace style

struct Font {
  double size = style::kLabelSize;
  bool bold = false;
};

enum class HAlign { left, center, right };
enum class VAlign { top, middle, baseline, bottom };

class Canvas {
 public:
  Canvas();
  ~Canvas();
  Canvas(const Canvas&) = delete;
  Canvas& operator=(const Canvas&) = delete;

  cairo_t* cr() { return cr_; }

  // Advance width of `s`; ascent + descent of the font (the same for every string, so rows of
  // labels line up).
  double text_width(const std::string& s, Font font);
  double text_height(Font font);
  double max_text_width(const std::vector<std::string>& labels, Font font);
  // `s` cut to at most `width` with a trailing ellipsis.
  std::string fit_text(const std::string& s, Font font, double width);

  // Draws `s` anchored at (x, y); `angle` in degrees, counter-clockwise (90: reading upwards).
  // The alignment is in the text's own frame: left/right are its start/end.
  void text(const std::string& s, double x, double y, Font font, const Rgb& colour,
            HAlign h = HAlign::left, VAlign v = VAlign::baseline, double angle = 0);

  void fill_rect(const Rect& r, const Rgb& colour);
  void stroke_rect(const Rect& r, const Rgb& colour, double line_width = 1);
  void line(double x0, double y0, double x1, double y1, const Rgb& colour, double line_width = 1);

  // The matrix m (row-major, rows x cols, finite values scaled by [vmin, vmax] through `map`,
  // NaN as style::kMissing) drawn as cells filling `r`. Cells are unantialiased rectangles, so
  // neighbours meet without seams; very large matrices go in as one image (nearest filter).
  void cells(const float* m, int64_t rows, int64_t cols, const Rect& r, Colormap map,
             double vmin, double vmax);
  // A vertical colour bar in `r` from vmin (bottom) to vmax (top) with ticks on its right.
  // Returns the width taken by the tick labels.
  double colorbar(const Rect& r, Colormap map, double vmin, double vmax, bool draw = true);

  // The finished picture (sharing the recording): width and height rounded up to whole units.
  Picture finish(double width, double height, std::vector<Rect> panels);

 private:
  cairo_surface_t* surface_ = nullptr;
  cairo_t* cr_ = nullptr;
  void set_font(Font font);
};

// [lo, hi] of the finite values of m (n floats); {0, 1} when there are none. When lo == hi
// the range is widened to [lo - 0.5, lo + 0.5] so that a constant matrix still has a scale.
struct Range {
  double lo = 0, hi = 1;
};
Range finite_range(const float* m, int64_t n);
// (v - lo) / (hi - lo) clamped to [0, 1].
double scaled(double v, const Range& range);

}  // namespace attn::plot

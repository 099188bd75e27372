// The cairo drawing layer shared by the charts: text measured and drawn alike in every output
// format, cell grids, colour bars, and the hand-over of a finished recording to a Picture.
#include "canvas.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/core/error.hpp"
#include "attn/plot/ticks.hpp"

namespace attn::plot {

namespace {
constexpr const char* kFontFamily = "DejaVu Sans";   // falls back through fontconfig
constexpr int64_t kMaxCellRects = 65536;            // beyond this, cells go in as an image
constexpr double kPi = 3.14159265358979323846;

void set_source(cairo_t* cr, const Rgb& c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

// Packs a colour into a cairo RGB24 pixel (0x00RRGGBB).
uint32_t pixel(const Rgb& c) {
  auto byte = [](double v) { return static_cast<uint32_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255.0)); };
  return (byte(c.r) << 16) | (byte(c.g) << 8) | byte(c.b);
}
}  // namespace

Picture::Impl::~Impl() {
  if (recording) cairo_surface_destroy(recording);
}

Range finite_range(const float* m, int64_t n) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(m[i])) continue;
    lo = std::min(lo, static_cast<double>(m[i]));
    hi = std::max(hi, static_cast<double>(m[i]));
  }
  if (lo > hi) return {0, 1};
  if (lo == hi) return {lo - 0.5, hi + 0.5};
  return {lo, hi};
}

double scaled(double v, const Range& range) {
  return std::clamp((v - range.lo) / (range.hi - range.lo), 0.0, 1.0);
}

Canvas::Canvas() {
  surface_ = cairo_recording_surface_create(CAIRO_CONTENT_COLOR_ALPHA, nullptr);
  cr_ = cairo_create(surface_);
  // Unhinted metrics: widths measured here are the widths drawn at any scale and format.
  cairo_font_options_t* fo = cairo_font_options_create();
  cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
  cairo_set_font_options(cr_, fo);
  cairo_font_options_destroy(fo);
  if (cairo_status(cr_) != CAIRO_STATUS_SUCCESS)
    throw Error(std::string("cairo: cannot start a drawing: ") + cairo_status_to_string(cairo_status(cr_)));
}

Canvas::~Canvas() {
  cairo_destroy(cr_);
  if (surface_) cairo_surface_destroy(surface_);
}

void Canvas::set_font(Font font) {
  cairo_select_font_face(cr_, kFontFamily, CAIRO_FONT_SLANT_NORMAL,
                         font.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr_, font.size);
}

double Canvas::text_width(const std::string& s, Font font) {
  set_font(font);
  cairo_text_extents_t te;
  cairo_text_extents(cr_, s.c_str(), &te);
  return te.x_advance;
}

double Canvas::text_height(Font font) {
  set_font(font);
  cairo_font_extents_t fe;
  cairo_font_extents(cr_, &fe);
  return fe.ascent + fe.descent;
}

double Canvas::max_text_width(const std::vector<std::string>& labels, Font font) {
  double w = 0;
  for (const auto& s : labels) w = std::max(w, text_width(s, font));
  return w;
}

std::string Canvas::fit_text(const std::string& s, Font font, double width) {
  if (text_width(s, font) <= width) return s;
  static const std::string kEllipsis = "\u2026";
  std::string cut = s;
  while (!cut.empty()) {
    // Drop one UTF-8 character (its continuation bytes are 10xxxxxx).
    do cut.pop_back();
    while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80);
    if (text_width(cut + kEllipsis, font) <= width) break;
  }
  return cut + kEllipsis;
}

void Canvas::text(const std::string& s, double x, double y, Font font, const Rgb& colour,
                  HAlign h, VAlign v, double angle) {
  set_font(font);
  cairo_font_extents_t fe;
  cairo_font_extents(cr_, &fe);
  cairo_text_extents_t te;
  cairo_text_extents(cr_, s.c_str(), &te);
  double dx = 0, dy = 0;   // from the anchor to the text origin, in the text's own frame
  if (h == HAlign::center) dx = -te.x_advance / 2;
  if (h == HAlign::right) dx = -te.x_advance;
  if (v == VAlign::top) dy = fe.ascent;
  if (v == VAlign::middle) dy = (fe.ascent - fe.descent) / 2;
  if (v == VAlign::bottom) dy = -fe.descent;
  cairo_save(cr_);
  cairo_translate(cr_, x, y);
  cairo_rotate(cr_, -angle * kPi / 180);
  cairo_move_to(cr_, dx, dy);
  set_source(cr_, colour);
  cairo_show_text(cr_, s.c_str());
  cairo_restore(cr_);
}

void Canvas::fill_rect(const Rect& r, const Rgb& colour) {
  set_source(cr_, colour);
  cairo_rectangle(cr_, r.x, r.y, r.w, r.h);
  cairo_fill(cr_);
}

void Canvas::stroke_rect(const Rect& r, const Rgb& colour, double line_width) {
  set_source(cr_, colour);
  cairo_set_line_width(cr_, line_width);
  cairo_rectangle(cr_, r.x, r.y, r.w, r.h);
  cairo_stroke(cr_);
}

void Canvas::line(double x0, double y0, double x1, double y1, const Rgb& colour, double line_width) {
  set_source(cr_, colour);
  cairo_set_line_width(cr_, line_width);
  cairo_move_to(cr_, x0, y0);
  cairo_line_to(cr_, x1, y1);
  cairo_stroke(cr_);
}

void Canvas::cells(const float* m, int64_t rows, int64_t cols, const Rect& r, Colormap map,
                   double vmin, double vmax) {
  const Range range{vmin, vmax > vmin ? vmax : vmin + 1};
  auto colour = [&](float v) { return std::isfinite(v) ? colormap_at(map, scaled(v, range)) : style::kMissing; };
  if (rows * cols <= kMaxCellRects) {
    const double cw = r.w / static_cast<double>(cols), ch = r.h / static_cast<double>(rows);
    cairo_save(cr_);
    cairo_set_antialias(cr_, CAIRO_ANTIALIAS_NONE);
    for (int64_t i = 0; i < rows; ++i) {
      // Edges computed from the grid, not accumulated, so neighbours share them exactly.
      const double y0 = r.y + static_cast<double>(i) * ch, y1 = r.y + static_cast<double>(i + 1) * ch;
      for (int64_t j = 0; j < cols; ++j) {
        const double x0 = r.x + static_cast<double>(j) * cw, x1 = r.x + static_cast<double>(j + 1) * cw;
        fill_rect({x0, y0, x1 - x0, y1 - y0}, colour(m[i * cols + j]));
      }
    }
    cairo_restore(cr_);
    return;
  }
  cairo_surface_t* img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(cols),
                                                    static_cast<int>(rows));
  if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(img);
    throw ConfigError("cannot draw a " + std::to_string(rows) + " x " + std::to_string(cols) + " matrix as an image");
  }
  unsigned char* data = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  for (int64_t i = 0; i < rows; ++i) {
    auto* row = reinterpret_cast<uint32_t*>(data + i * stride);
    for (int64_t j = 0; j < cols; ++j) row[j] = pixel(colour(m[i * cols + j]));
  }
  cairo_surface_mark_dirty(img);
  cairo_save(cr_);
  cairo_translate(cr_, r.x, r.y);
  cairo_scale(cr_, r.w / static_cast<double>(cols), r.h / static_cast<double>(rows));
  cairo_set_source_surface(cr_, img, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr_), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr_, 0, 0, static_cast<double>(cols), static_cast<double>(rows));
  cairo_fill(cr_);
  cairo_restore(cr_);
  cairo_surface_destroy(img);
}

double Canvas::colorbar(const Rect& r, Colormap map, double vmin, double vmax, bool draw) {
  const Font font{style::kLabelSize - 1};
  const Ticks ticks = linear_ticks(vmin, vmax, std::clamp(static_cast<int>(r.h / 30), 2, 8));
  double label_w = 0;
  for (const auto& s : ticks.labels) label_w = std::max(label_w, text_width(s, font));
  const double tick_len = 3;
  if (!draw) return tick_len + 2 + label_w;
  cairo_pattern_t* grad = cairo_pattern_create_linear(0, r.bottom(), 0, r.y);
  constexpr int kStops = 32;
  for (int k = 0; k <= kStops; ++k) {
    const Rgb c = colormap_at(map, static_cast<double>(k) / kStops);
    cairo_pattern_add_color_stop_rgb(grad, static_cast<double>(k) / kStops, c.r, c.g, c.b);
  }
  cairo_set_source(cr_, grad);
  cairo_rectangle(cr_, r.x, r.y, r.w, r.h);
  cairo_fill(cr_);
  cairo_pattern_destroy(grad);
  stroke_rect(r, style::kAxis, 0.8);
  for (size_t i = 0; i < ticks.values.size(); ++i) {
    const double y = r.bottom() - (ticks.values[i] - vmin) / (vmax - vmin) * r.h;
    line(r.right(), y, r.right() + tick_len, y, style::kAxis, 0.8);
    text(ticks.labels[i], r.right() + tick_len + 2, y, font, style::kText, HAlign::left, VAlign::middle);
  }
  return tick_len + 2 + label_w;
}

Picture Canvas::finish(double width, double height, std::vector<Rect> panels) {
  const cairo_status_t status = cairo_status(cr_);
  if (status != CAIRO_STATUS_SUCCESS)
    throw Error(std::string("cairo: drawing failed: ") + cairo_status_to_string(status));
  auto impl = std::make_shared<Picture::Impl>();
  impl->width = std::ceil(width - 1e-9);
  impl->height = std::ceil(height - 1e-9);
  impl->panels = std::move(panels);
  impl->recording = cairo_surface_reference(surface_);
  return Picture(std::move(impl));
}

}  // namespace attn::plot

// Line charts (see curve.hpp): data ranges, axes with round ticks on linear or log scales,
// clipped polylines, and a legend in the emptiest corner.
#include "attn/plot/curve.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "attn/core/error.hpp"
#include "attn/plot/ticks.hpp"
#include "canvas.hpp"

namespace attn::plot {

namespace {

// One axis: data range in the drawn space (log10 of the values on a log axis).
struct Axis {
  bool log = false;
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  double to_space(double v) const { return log ? std::log10(v) : v; }
  void add(double v) {
    lo = std::min(lo, to_space(v));
    hi = std::max(hi, to_space(v));
  }
  // Widened by `pad` of its span each side (a flat range gets a span of its own).
  void finish(double pad) {
    if (lo == hi) {
      const double half = log ? 0.5 : std::max(std::fabs(lo) * 0.1, 0.5);
      lo -= half, hi += half;
      return;
    }
    const double span = hi - lo;
    lo -= pad * span, hi += pad * span;
  }
  Ticks ticks(int max_ticks) const {
    return log ? log_ticks(std::pow(10.0, lo), std::pow(10.0, hi), max_ticks) : linear_ticks(lo, hi, max_ticks);
  }
};

}  // namespace

Picture curve(const std::vector<Series>& series, const CurveOptions& opts) {
  if (series.empty()) throw ConfigError("curve: no series to draw");
  Axis ax{opts.log_x}, ay{opts.log_y};
  for (size_t s = 0; s < series.size(); ++s) {
    const Series& sr = series[s];
    const std::string name = sr.name.empty() ? "series " + std::to_string(s) : "'" + sr.name + "'";
    if (!sr.x.empty() && sr.x.size() != sr.y.size())
      throw ShapeError("curve: " + name + " has " + std::to_string(sr.x.size()) + " x values and " +
                       std::to_string(sr.y.size()) + " y values");
    for (size_t i = 0; i < sr.y.size(); ++i) {
      const double x = sr.x.empty() ? static_cast<double>(i) : sr.x[i], y = sr.y[i];
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if ((opts.log_x && x <= 0) || (opts.log_y && y <= 0))
        throw DataError("curve: a log " + std::string(opts.log_x && x <= 0 ? "x" : "y") +
                        " axis needs positive values, but " + name + " has " +
                        std::to_string(opts.log_x && x <= 0 ? x : y) + " at index " + std::to_string(i));
      ax.add(x);
      ay.add(y);
    }
  }
  if (!(ax.lo <= ax.hi)) throw DataError("curve: no finite point to draw");
  ax.finish(0.02);
  ay.finish(0.05);

  Canvas cv;
  const Font title_font{style::kTitleSize, true}, axis_font{style::kAxisTitleSize};
  const Font tick_font{style::kLabelSize}, legend_font{style::kLabelSize};
  const double W = opts.width, H = opts.height;
  const double title_h = opts.title.empty() ? 0 : cv.text_height(title_font) + 10;
  const double tick_h = cv.text_height(tick_font), tick_len = 4;
  const double x_title_h = opts.x_title.empty() ? 0 : cv.text_height(axis_font) + 6;
  const double y_title_w = opts.y_title.empty() ? 0 : cv.text_height(axis_font) + 8;
  const double top = style::kMargin + title_h + tick_h / 2;
  const double bottom = style::kMargin + x_title_h + tick_h + tick_len + 4;
  const Ticks yt = ay.ticks(std::max(2, static_cast<int>((H - top - bottom) / 45)));
  const double left = std::ceil(style::kMargin + y_title_w + cv.max_text_width(yt.labels, tick_font) + tick_len + 4);
  const double right = style::kMargin + 8;
  const Rect plot{left, std::round(top), W - left - right, std::round(H - bottom) - std::round(top)};
  if (plot.w < 40 || plot.h < 40)
    throw ConfigError("curve: " + std::to_string(static_cast<int>(W)) + " x " + std::to_string(static_cast<int>(H)) +
                      " leaves no room for the plot; make the picture larger");
  const Ticks xt = ax.ticks(std::max(2, static_cast<int>(plot.w / 90)));

  auto px = [&](double x) { return plot.x + (ax.to_space(x) - ax.lo) / (ax.hi - ax.lo) * plot.w; };
  auto py = [&](double y) { return plot.bottom() - (ay.to_space(y) - ay.lo) / (ay.hi - ay.lo) * plot.h; };

  // Grid, axes, ticks and their labels.
  for (size_t i = 0; i < xt.values.size(); ++i) {
    const double x = std::round(px(xt.values[i])) + 0.5;
    cv.line(x, plot.y, x, plot.bottom(), style::kGrid, 1);
    cv.line(x, plot.bottom(), x, plot.bottom() + tick_len, style::kAxis, 1);
    cv.text(xt.labels[i], x, plot.bottom() + tick_len + 2, tick_font, style::kText, HAlign::center, VAlign::top);
  }
  for (size_t i = 0; i < yt.values.size(); ++i) {
    const double y = std::round(py(yt.values[i])) + 0.5;
    cv.line(plot.x, y, plot.right(), y, style::kGrid, 1);
    cv.line(plot.x - tick_len, y, plot.x, y, style::kAxis, 1);
    cv.text(yt.labels[i], plot.x - tick_len - 3, y, tick_font, style::kText, HAlign::right, VAlign::middle);
  }
  cv.line(plot.x + 0.5, plot.y, plot.x + 0.5, plot.bottom() + 0.5, style::kAxis, 1);
  cv.line(plot.x, plot.bottom() + 0.5, plot.right(), plot.bottom() + 0.5, style::kAxis, 1);
  if (!opts.title.empty()) cv.text(opts.title, W / 2, style::kMargin, title_font, style::kText, HAlign::center, VAlign::top);
  if (!opts.x_title.empty())
    cv.text(opts.x_title, plot.x + plot.w / 2, H - style::kMargin, axis_font, style::kText, HAlign::center, VAlign::bottom);
  if (!opts.y_title.empty())
    cv.text(opts.y_title, style::kMargin, plot.y + plot.h / 2, axis_font, style::kText, HAlign::center, VAlign::top, 90);

  // The lines, clipped to the plot; a non-finite value ends a stroke.
  cairo_t* cr = cv.cr();
  cairo_save(cr);
  cairo_rectangle(cr, plot.x, plot.y, plot.w, plot.h);
  cairo_clip(cr);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  std::vector<std::pair<double, double>> points;   // every drawn point, for placing the legend
  for (size_t s = 0; s < series.size(); ++s) {
    const Series& sr = series[s];
    const Rgb c = palette(static_cast<int>(s));
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_set_line_width(cr, 1.8);
    bool pen_down = false;
    size_t finite = 0;
    for (size_t i = 0; i < sr.y.size(); ++i) {
      const double x = sr.x.empty() ? static_cast<double>(i) : sr.x[i], y = sr.y[i];
      if (!std::isfinite(x) || !std::isfinite(y)) {
        pen_down = false;
        continue;
      }
      points.emplace_back(px(x), py(y));
      ++finite;
      if (pen_down) cairo_line_to(cr, px(x), py(y));
      else cairo_move_to(cr, px(x), py(y));
      pen_down = true;
    }
    cairo_stroke(cr);
    if (opts.markers || finite == 1) {
      for (size_t i = 0; i < sr.y.size(); ++i) {
        const double x = sr.x.empty() ? static_cast<double>(i) : sr.x[i], y = sr.y[i];
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        cairo_new_sub_path(cr);
        cairo_arc(cr, px(x), py(y), 2.6, 0, 2 * 3.14159265358979323846);
      }
      cairo_fill(cr);
    }
  }
  cairo_restore(cr);

  // Legend: named series only, in the corner of the plot covering the fewest points.
  std::vector<size_t> named;
  for (size_t s = 0; s < series.size(); ++s)
    if (!series[s].name.empty()) named.push_back(s);
  if (!named.empty()) {
    const double row_h = cv.text_height(legend_font) + 4, sample_w = 22, pad = 6;
    double text_w = 0;
    for (size_t s : named) text_w = std::max(text_w, cv.text_width(series[s].name, legend_font));
    const double bw = pad + sample_w + 6 + text_w + pad, bh = pad + row_h * static_cast<double>(named.size()) + pad - 4;
    const double inset = 8;
    const std::array<Rect, 4> corners{{{plot.right() - inset - bw, plot.y + inset, bw, bh},
                                       {plot.x + inset, plot.y + inset, bw, bh},
                                       {plot.right() - inset - bw, plot.bottom() - inset - bh, bw, bh},
                                       {plot.x + inset, plot.bottom() - inset - bh, bw, bh}}};
    size_t best = 0, best_hits = std::numeric_limits<size_t>::max();
    for (size_t k = 0; k < corners.size(); ++k) {
      const Rect& r = corners[k];
      const size_t hits = static_cast<size_t>(std::count_if(points.begin(), points.end(), [&](const auto& p) {
        return p.first >= r.x && p.first <= r.right() && p.second >= r.y && p.second <= r.bottom();
      }));
      if (hits < best_hits) best = k, best_hits = hits;
    }
    const Rect box = corners[best];
    cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
    cairo_rectangle(cr, box.x, box.y, box.w, box.h);
    cairo_fill(cr);
    cv.stroke_rect(box, {0.8, 0.8, 0.8}, 0.8);
    for (size_t k = 0; k < named.size(); ++k) {
      const double y = box.y + pad + row_h * (static_cast<double>(k) + 0.5) - 2;
      cv.line(box.x + pad, y, box.x + pad + sample_w, y, palette(static_cast<int>(named[k])), 2);
      cv.text(series[named[k]].name, box.x + pad + sample_w + 6, y, legend_font, style::kText, HAlign::left, VAlign::middle);
    }
  }
  return cv.finish(W, H, {plot});
}

}  // namespace attn::plot

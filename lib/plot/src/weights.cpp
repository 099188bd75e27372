// Memory weightings over time (NTM figure style, see weights.hpp): stacked panels of cells with
// one time scale, each scaled to its own range.
#include "attn/plot/weights.hpp"

#include <algorithm>
#include <cmath>

#include "attn/plot/ticks.hpp"
#include "canvas.hpp"

namespace attn::plot {

Picture weights(const std::vector<WeightsPanel>& panels_in, const WeightsOptions& opts) {
  if (panels_in.empty()) throw ConfigError("weights: no panel to draw");
  int64_t T_max = 0;
  for (const auto& p : panels_in) {
    check_tensor(p.values, {kAny, kAny}, "weights: panel '" + p.title + "' [T, K]");
    if (p.values.numel() == 0)
      throw ShapeError("weights: panel '" + p.title + "' [T, K] has shape " + to_string(p.values.shape()) +
                       ", nothing to draw");
    T_max = std::max(T_max, p.values.dim(0));
  }

  Canvas cv;
  const Font title_font{style::kTitleSize, true}, panel_font{style::kLabelSize, true};
  const Font tick_font{style::kLabelSize - 2}, axis_font{style::kAxisTitleSize};
  const double title_h = opts.title.empty() ? 0 : cv.text_height(title_font) + 10;
  const double panel_title_h = cv.text_height(panel_font) + 4;
  const double tick_h = cv.text_height(tick_font);
  double y_labels_w = 0;   // first and last location numbers, left of each panel
  for (const auto& p : panels_in)
    y_labels_w = std::max(y_labels_w, cv.text_width(std::to_string(p.values.dim(1) - 1), tick_font));
  y_labels_w += style::kPad;
  const double x_axis_h = 4 + tick_h + (opts.time_title.empty() ? 0 : 4 + cv.text_height(axis_font));
  const double fixed_w = 2 * style::kMargin + y_labels_w;

  double cell = opts.cell;
  if (cell <= 0)
    cell = opts.width > 0 ? std::max((opts.width - fixed_w) / static_cast<double>(T_max), 0.5)
                          : std::clamp(std::floor(720.0 / static_cast<double>(T_max)), 3.0, 16.0);
  const double grid_w = cell * static_cast<double>(T_max);

  const double gx = std::round(style::kMargin + y_labels_w);
  double y = style::kMargin + title_h;
  std::vector<Rect> rects;
  for (const auto& p : panels_in) {
    const int64_t T = p.values.dim(0), K = p.values.dim(1);
    const double row_h = std::max(std::min(cell, opts.max_panel_height / static_cast<double>(K)), 1.0);
    cv.text(p.title, gx, y, panel_font, style::kText, HAlign::left, VAlign::top);
    y += panel_title_h;
    const Rect r{gx, std::round(y), cell * static_cast<double>(T), row_h * static_cast<double>(K)};
    // [T, Nm] (K columns here) drawn with time along x: the transpose, [Nm, T].
    std::vector<float> kt(static_cast<size_t>(K * T));
    const float* v = p.values.data();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t k = 0; k < K; ++k) kt[static_cast<size_t>(k * T + t)] = v[t * K + k];
    const Range range = finite_range(v, p.values.numel());
    const double lo = std::min(0.0, range.lo), hi = range.hi > lo ? range.hi : lo + 1;
    cv.cells(kt.data(), K, T, r, opts.colormap, lo, hi);
    cv.stroke_rect(r, style::kAxis, 0.6);
    cv.text("0", r.x - 3, r.y + std::min(row_h, tick_h) / 2, tick_font, style::kText, HAlign::right, VAlign::middle);
    if (K > 1)
      cv.text(std::to_string(K - 1), r.x - 3, r.bottom() - std::min(row_h, tick_h) / 2, tick_font, style::kText,
              HAlign::right, VAlign::middle);
    rects.push_back(r);
    y = r.bottom() + 10;
  }

  // The shared time axis under the last panel.
  y -= 10;
  const Ticks ticks = linear_ticks(0, static_cast<double>(T_max - 1), std::max(2, static_cast<int>(grid_w / 50)));
  for (size_t i = 0; i < ticks.values.size(); ++i) {
    if (ticks.values[i] != std::round(ticks.values[i])) continue;   // whole time steps only
    const double x = gx + (ticks.values[i] + 0.5) * cell;
    cv.line(x, y, x, y + 3, style::kAxis, 0.8);
    cv.text(ticks.labels[i], x, y + 4, tick_font, style::kText, HAlign::center, VAlign::top);
  }
  if (!opts.time_title.empty())
    cv.text(opts.time_title + " \u2192", gx + grid_w / 2, y + 8 + tick_h, axis_font, style::kText, HAlign::center,
            VAlign::top);
  double W = std::max(opts.width, gx + grid_w + style::kMargin);
  if (!opts.title.empty()) {
    W = std::max(W, 2 * style::kMargin + cv.text_width(opts.title, title_font));
    cv.text(opts.title, W / 2, style::kMargin, title_font, style::kText, HAlign::center, VAlign::top);
  }
  return cv.finish(W, y + x_axis_h + style::kMargin, std::move(rects));
}

}  // namespace attn::plot

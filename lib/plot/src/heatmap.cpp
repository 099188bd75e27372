// Heatmaps: attention matrices as cells with token labels, a shared colour bar, and grids of
// panels for several heads (layout described in heatmap.hpp).
#include "attn/plot/heatmap.hpp"

#include <algorithm>
#include <cmath>

#include "canvas.hpp"

namespace attn::plot {

namespace {

constexpr double kGapX = 14;          // between panels of a grid
constexpr double kColorbarGap = 14;
constexpr double kColorbarWidth = 12;
constexpr double kMinColorbar = 90;   // a colour bar shorter than this cannot show its ticks
constexpr double kAutoExtent = 560;   // an automatic grid aims at about this size

// Every size that depends on the cell side; computed again whenever the cell changes.
struct Layout {
  double cell = 0;
  Font label;                  // token labels
  int64_t x_stride = 1, y_stride = 1;   // label every n-th row/column when cells are small
  bool rotate_x = false;
  double title_h = 0, x_title_h = 0, x_labels_h = 0;   // bands above the grid
  double y_title_w = 0, y_labels_w = 0;                // bands left of the grid
  double caption_h = 0;        // under each panel of a grid
  double panel_w = 0, panel_h = 0, grid_w = 0, grid_h = 0, bar_h = 0, bar_w = 0;
  double width = 0, height = 0;
};

}  // namespace

Picture heatmap(const Tensor& maps_in, const HeatmapOptions& opts) {
  if (maps_in.rank() != 2 && maps_in.rank() != 3)
    throw ShapeError("heatmap: maps [P, R, C] or [R, C] has shape " + to_string(maps_in.shape()) +
                     ", expected rank 2 or 3");
  check_tensor(maps_in, Shape(maps_in.rank(), kAny), "heatmap: maps [P, R, C]");
  const Tensor maps = maps_in.rank() == 2 ? maps_in.reshape({1, maps_in.dim(0), maps_in.dim(1)}) : maps_in;
  const int64_t P = maps.dim(0), R = maps.dim(1), C = maps.dim(2);
  if (P == 0 || R == 0 || C == 0)
    throw ShapeError("heatmap: maps [P, R, C] has shape " + to_string(maps.shape()) + ", nothing to draw");
  auto check_count = [](size_t n, int64_t want, const char* what, const char* of) {
    if (n != 0 && static_cast<int64_t>(n) != want)
      throw ShapeError("heatmap: " + std::to_string(n) + " " + what + " for " + std::to_string(want) + " " + of);
  };
  check_count(opts.x_labels.size(), C, "x labels", "columns");
  check_count(opts.y_labels.size(), R, "y labels", "rows");
  check_count(opts.panel_titles.size(), P, "panel titles", "panels");

  std::vector<std::string> xl = opts.x_labels, yl = opts.y_labels, captions = opts.panel_titles;
  if (xl.empty()) for (int64_t j = 0; j < C; ++j) xl.push_back(std::to_string(j));
  if (yl.empty()) for (int64_t i = 0; i < R; ++i) yl.push_back(std::to_string(i));
  if (captions.empty() && P > 1) for (int64_t p = 0; p < P; ++p) captions.push_back("head " + std::to_string(p));

  const Range data = finite_range(maps.data(), maps.numel());
  const double vmin = opts.vmin.value_or(data.lo), vmax = opts.vmax.value_or(data.hi);
  if (!(vmax > vmin)) throw ConfigError("heatmap: colour scale needs vmin < vmax");

  const int64_t gc = opts.columns > 0 ? std::min<int64_t>(opts.columns, P)
                                      : static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(P))));
  const int64_t gr = (P + gc - 1) / gc;

  Canvas cv;
  const Font title_font{style::kTitleSize, true}, axis_font{style::kAxisTitleSize};
  const Font caption_font{style::kLabelSize};

  auto measure = [&](double cell) {
    Layout L;
    L.cell = cell;
    L.label = Font{std::clamp(cell * 0.8, 6.0, style::kLabelSize)};
    const double th = cv.text_height(L.label);
    L.y_stride = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(th * 0.95 / cell)));
    const double xw = cv.max_text_width(xl, L.label);
    L.rotate_x = xw > cell - 2;
    L.x_stride = L.rotate_x ? L.y_stride : 1;
    L.x_labels_h = (L.rotate_x ? xw : th) + style::kPad;
    L.y_labels_w = cv.max_text_width(yl, L.label) + style::kPad;
    L.title_h = opts.title.empty() ? 0 : cv.text_height(title_font) + 10;
    L.x_title_h = opts.x_title.empty() ? 0 : cv.text_height(axis_font) + 4;
    L.y_title_w = opts.y_title.empty() ? 0 : cv.text_height(axis_font) + 6;
    L.caption_h = captions.empty() ? 0 : cv.text_height(caption_font) + 6;
    L.panel_w = static_cast<double>(C) * cell;
    L.panel_h = static_cast<double>(R) * cell;
    const double gap_y = L.caption_h + 8;
    L.grid_w = static_cast<double>(gc) * L.panel_w + static_cast<double>(gc - 1) * kGapX;
    L.grid_h = static_cast<double>(gr) * L.panel_h + static_cast<double>(gr - 1) * gap_y + L.caption_h;
    L.bar_h = std::max(static_cast<double>(gr) * L.panel_h + static_cast<double>(gr - 1) * gap_y, kMinColorbar);
    L.bar_w = opts.colorbar ? kColorbarGap + kColorbarWidth + cv.colorbar({0, 0, kColorbarWidth, L.bar_h},
                                                                          opts.colormap, vmin, vmax, false)
                            : 0;
    L.width = 2 * style::kMargin + L.y_title_w + L.y_labels_w + L.grid_w + L.bar_w;
    L.height = 2 * style::kMargin + L.title_h + L.x_title_h + L.x_labels_h + std::max(L.grid_h, opts.colorbar ? L.bar_h : 0.0);
    // The title may be wider than everything else.
    if (!opts.title.empty()) L.width = std::max(L.width, 2 * style::kMargin + cv.text_width(opts.title, title_font));
    return L;
  };

  double cell = opts.cell;
  if (cell <= 0) {
    const double cells_w = static_cast<double>(gc * C), cells_h = static_cast<double>(gr * R);
    cell = std::clamp(std::floor(kAutoExtent / std::max(cells_w, cells_h)), 3.0, 26.0);
    if (opts.width > 0 || opts.height > 0) {
      // Fit the given size: the bands around the grid depend on the cell (label size and
      // rotation), so solve a few times; it settles at once in practice.
      for (int it = 0; it < 4; ++it) {
        const Layout L = measure(cell);
        double fit = 1e9;
        if (opts.width > 0) fit = std::min(fit, (opts.width - (L.width - static_cast<double>(gc) * L.panel_w)) / cells_w);
        if (opts.height > 0) fit = std::min(fit, (opts.height - (L.height - static_cast<double>(gr) * L.panel_h)) / cells_h);
        cell = std::max(fit, 1.0);
      }
    }
  }
  const Layout L = measure(cell);
  const double W = std::max(opts.width, L.width), H = std::max(opts.height, L.height);
  const double ox = std::round((W - L.width) / 2), oy = std::round((H - L.height) / 2);

  if (!opts.title.empty())
    cv.text(opts.title, W / 2, oy + style::kMargin, title_font, style::kText, HAlign::center, VAlign::top);
  const double grid_x = std::round(ox + style::kMargin + L.y_title_w + L.y_labels_w);
  const double grid_y = std::round(oy + style::kMargin + L.title_h + L.x_title_h + L.x_labels_h);
  if (!opts.x_title.empty())
    cv.text(opts.x_title, grid_x + L.grid_w / 2, oy + style::kMargin + L.title_h, axis_font, style::kText,
            HAlign::center, VAlign::top);
  if (!opts.y_title.empty())
    cv.text(opts.y_title, ox + style::kMargin + L.y_title_w / 2, grid_y + (L.grid_h - L.caption_h) / 2, axis_font,
            style::kText, HAlign::center, VAlign::middle, 90);

  std::vector<Rect> panels;
  const double gap_y = L.caption_h + 8;
  for (int64_t p = 0; p < P; ++p) {
    const int64_t row = p / gc, col = p % gc;
    const Rect r{grid_x + static_cast<double>(col) * (L.panel_w + kGapX),
                 grid_y + static_cast<double>(row) * (L.panel_h + gap_y), L.panel_w, L.panel_h};
    panels.push_back(r);
    cv.cells(maps[p].data(), R, C, r, opts.colormap, vmin, vmax);
    cv.stroke_rect(r, style::kAxis, 0.6);
    if (row == 0)
      for (int64_t j = 0; j < C; j += L.x_stride) {
        const double x = r.x + (static_cast<double>(j) + 0.5) * cell;
        if (L.rotate_x)
          cv.text(xl[j], x, r.y - style::kPad, L.label, style::kText, HAlign::left, VAlign::middle, 90);
        else
          cv.text(xl[j], x, r.y - style::kPad, L.label, style::kText, HAlign::center, VAlign::bottom);
      }
    if (col == 0)
      for (int64_t i = 0; i < R; i += L.y_stride)
        cv.text(yl[i], r.x - style::kPad, r.y + (static_cast<double>(i) + 0.5) * cell, L.label, style::kText,
                HAlign::right, VAlign::middle);
    if (!captions.empty())
      cv.text(captions[p], r.x + r.w / 2, r.bottom() + 4, caption_font, style::kText, HAlign::center, VAlign::top);
  }
  if (opts.colorbar)
    cv.colorbar({grid_x + L.grid_w + kColorbarGap, grid_y, kColorbarWidth, L.bar_h}, opts.colormap, vmin, vmax);
  return cv.finish(W, H, std::move(panels));
}

}  // namespace attn::plot

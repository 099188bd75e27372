// Tables of numbers (see table.hpp): a header row, row labels, cells shaded by value with the
// number printed in a colour that stays readable on the shade.
#include "attn/plot/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "canvas.hpp"

namespace attn::plot {

Picture table(const Tensor& m, const TableOptions& opts) {
  check_tensor(m, {kAny, kAny}, "table: m [R, C]");
  const int64_t R = m.dim(0), C = m.dim(1);
  if (R == 0 || C == 0) throw ShapeError("table: m [R, C] has shape " + to_string(m.shape()) + ", nothing to draw");
  if (!opts.row_labels.empty() && static_cast<int64_t>(opts.row_labels.size()) != R)
    throw ShapeError("table: " + std::to_string(opts.row_labels.size()) + " row labels for " + std::to_string(R) + " rows");
  if (!opts.col_labels.empty() && static_cast<int64_t>(opts.col_labels.size()) != C)
    throw ShapeError("table: " + std::to_string(opts.col_labels.size()) + " column labels for " + std::to_string(C) +
                     " columns");
  if (opts.precision < 0 || opts.precision > 12) throw ConfigError("table: precision must be in [0, 12]");

  Canvas cv;
  const Font title_font{style::kTitleSize, true}, head_font{style::kLabelSize, true}, cell_font{style::kLabelSize};
  std::vector<std::string> rows, cols, numbers(static_cast<size_t>(R * C));
  for (int64_t i = 0; i < R; ++i)
    rows.push_back(cv.fit_text(opts.row_labels.empty() ? std::to_string(i) : opts.row_labels[static_cast<size_t>(i)],
                               cell_font, opts.max_label_width));
  for (int64_t j = 0; j < C; ++j) cols.push_back(opts.col_labels.empty() ? std::to_string(j) : opts.col_labels[static_cast<size_t>(j)]);
  const float* v = m.data();
  for (int64_t i = 0; i < R * C; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", opts.precision, static_cast<double>(v[i]));
    numbers[static_cast<size_t>(i)] = std::isfinite(v[i]) ? buf : "\u2013";
  }

  const double pad = 8;
  const double cell_w = std::max({cv.max_text_width(numbers, cell_font), cv.max_text_width(cols, head_font), 28.0}) + 2 * pad;
  const double cell_h = std::round(cv.text_height(cell_font) + 9);
  const double label_w = std::max(cv.max_text_width(rows, cell_font), cv.text_width(opts.row_title, head_font)) + 2 * pad;
  const double title_h = opts.title.empty() ? 0 : cv.text_height(title_font) + 10;
  const double head_h = cell_h;
  double W = 2 * style::kMargin + label_w + cell_w * static_cast<double>(C);
  if (!opts.title.empty()) W = std::max(W, 2 * style::kMargin + cv.text_width(opts.title, title_font));
  const double H = 2 * style::kMargin + title_h + head_h + cell_h * static_cast<double>(R);

  const Range data = finite_range(v, m.numel());
  const double vmin = opts.vmin.value_or(std::min(0.0, data.lo)), vmax = opts.vmax.value_or(data.hi);
  if (!(vmax > vmin)) throw ConfigError("table: shading scale needs vmin < vmax");

  const double x0 = std::round((W - (label_w + cell_w * static_cast<double>(C))) / 2);
  const double y0 = style::kMargin + title_h;
  const Rect grid{x0 + label_w, y0 + head_h, cell_w * static_cast<double>(C), cell_h * static_cast<double>(R)};
  if (!opts.title.empty()) cv.text(opts.title, W / 2, style::kMargin, title_font, style::kText, HAlign::center, VAlign::top);
  if (!opts.row_title.empty())
    cv.text(opts.row_title, x0 + pad, y0 + head_h / 2, head_font, style::kText, HAlign::left, VAlign::middle);
  for (int64_t j = 0; j < C; ++j)
    cv.text(cols[static_cast<size_t>(j)], grid.x + (static_cast<double>(j) + 0.5) * cell_w, y0 + head_h / 2, head_font,
            style::kText, HAlign::center, VAlign::middle);
  for (int64_t i = 0; i < R; ++i) {
    const double y = grid.y + static_cast<double>(i) * cell_h;
    cv.text(rows[static_cast<size_t>(i)], x0 + pad, y + cell_h / 2, cell_font, style::kText, HAlign::left, VAlign::middle);
    for (int64_t j = 0; j < C; ++j) {
      const float x = v[i * C + j];
      const Rgb shade = std::isfinite(x) ? colormap_at(opts.colormap, (x - vmin) / (vmax - vmin)) : style::kMissing;
      const Rect cell{grid.x + static_cast<double>(j) * cell_w, y, cell_w, cell_h};
      cv.fill_rect(cell, shade);
      const Rgb ink = luminance(shade) < 0.5 ? style::kWhite : style::kText;
      cv.text(numbers[static_cast<size_t>(i * C + j)], cell.x + cell_w / 2, y + cell_h / 2, cell_font, ink,
              HAlign::center, VAlign::middle);
    }
  }
  // White rules between cells, a dark rule under the header and at the bottom.
  for (int64_t j = 1; j < C; ++j) {
    const double x = grid.x + static_cast<double>(j) * cell_w;
    cv.line(x, grid.y, x, grid.bottom(), style::kWhite, 1);
  }
  for (int64_t i = 1; i < R; ++i) {
    const double y = grid.y + static_cast<double>(i) * cell_h;
    cv.line(grid.x, y, grid.right(), y, style::kWhite, 1);
  }
  cv.line(x0, grid.y, grid.right(), grid.y, style::kAxis, 1.2);
  cv.line(x0, grid.bottom(), grid.right(), grid.bottom(), style::kAxis, 1.2);
  return cv.finish(W, H, {grid});
}

}  // namespace attn::plot

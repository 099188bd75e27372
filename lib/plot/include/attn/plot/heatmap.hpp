// Heatmaps of attention: one matrix, or a grid of them (one per head), with token labels.
//
// The layout follows Bahdanau et al. 2015, Figure 3: the matrix drawn as square cells, rows
// (target words) labelled on the left, columns (source words) on top, turned upright when they
// are wider than a cell; then a colour bar on the right and the title above. A grid of panels
// (e.g. all heads of a layer) shares one colour scale and one colour bar; the column labels
// are drawn above the top row, the row labels left of the first column, and each panel's own
// title below it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/plot/color.hpp"
#include "attn/plot/picture.hpp"

namespace attn::plot {

struct HeatmapOptions {
  std::string title;
  std::vector<std::string> x_labels;       // one per column, or empty (column numbers)
  std::vector<std::string> y_labels;       // one per row, or empty (row numbers)
  std::string x_title, y_title;            // axis titles, e.g. "source", "target"
  std::vector<std::string> panel_titles;   // one per panel, or empty ("head 0", ... if several)
  Colormap colormap = Colormap::viridis;
  std::optional<double> vmin, vmax;        // colour scale; default: the finite data range
  double cell = 0;                         // cell side in units; 0: from width/height, or automatic
  double width = 0, height = 0;            // picture size; 0: fitted to the content
  int columns = 0;                         // panels per grid row; 0: about square
  bool colorbar = true;
};

// maps: [rows, cols] or [panels, rows, cols]. NaN cells are drawn light grey.
// panels(): the cell grid of each panel; cell (r, c) of panel p is the rectangle
// { x + c * w / cols, y + r * h / rows, w / cols, h / rows }.
// Throws ShapeError on a bad rank or a label count that does not match.
Picture heatmap(const Tensor& maps, const HeatmapOptions& opts = {});

}  // namespace attn::plot

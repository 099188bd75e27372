// A labelled matrix of numbers: each cell shaded by its value and printed, e.g. the attention
// of an end-to-end memory network over the story's sentences (rows) at each hop (columns), as
// in Sukhbaatar et al. 2015, Figure 2 / Table 2.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/plot/color.hpp"
#include "attn/plot/picture.hpp"

namespace attn::plot {

struct TableOptions {
  std::string title;
  std::vector<std::string> row_labels;   // one per row, or empty (row numbers)
  std::vector<std::string> col_labels;   // one per column, or empty (column numbers)
  std::string row_title;                 // header above the row labels, e.g. "sentence"
  Colormap colormap = Colormap::blues;
  std::optional<double> vmin, vmax;      // shading scale; default [min(0, min), max]
  int precision = 2;                     // decimals printed
  double max_label_width = 420;          // longer row labels are cut with an ellipsis
};

// m: [rows, cols]. panels(): the cell grid. Throws ShapeError on a bad rank or label count.
Picture table(const Tensor& m, const TableOptions& opts = {});

}  // namespace attn::plot

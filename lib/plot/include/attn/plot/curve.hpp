// Line charts: training curves and any other series of (x, y) points, on linear or
// logarithmic axes, with ticks at round numbers, light grid lines, axis titles and a legend
// placed in the corner of the plot that hides the fewest points.
#pragma once
#include <string>
#include <vector>

#include "attn/plot/picture.hpp"

namespace attn::plot {

struct Series {
  std::string name;             // legend entry; empty: not in the legend
  std::vector<double> x;        // empty: 0, 1, 2, ...
  std::vector<double> y;        // non-finite values break the line
};

struct CurveOptions {
  std::string title, x_title, y_title;
  bool log_x = false, log_y = false;
  bool markers = false;         // a dot at every point (always for one-point series)
  double width = 640, height = 400;
};

// panels(): the plot area. Throws ShapeError when x and y lengths differ, DataError when a
// log axis meets a value <= 0 or there is no finite point at all.
Picture curve(const std::vector<Series>& series, const CurveOptions& opts = {});

}  // namespace attn::plot

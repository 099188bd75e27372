// Memory weightings over time, in the style of Graves et al. 2014 (Neural Turing Machines),
// Figures 4 and 6: each panel is a matrix with time along x and its second index (memory
// location, input bit, ...) along y, drawn as cells; the panels are stacked with one shared
// time scale (inputs and outputs above, then write and read weightings), each titled above its
// top-left corner. Each panel is scaled to its own range [min(0, min), max], since inputs,
// outputs and weightings live on different scales.
#pragma once
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/plot/color.hpp"
#include "attn/plot/picture.hpp"

namespace attn::plot {

struct WeightsPanel {
  std::string title;      // e.g. "inputs", "write weighting"
  Tensor values;          // [T, Nm]: time steps by memory locations (or bits: [T, I], [T, O]);
                          // T may differ per panel
};

struct WeightsOptions {
  std::string title;
  std::string time_title = "time";
  Colormap colormap = Colormap::gray;
  double cell = 0;              // width of one time step; 0: automatic (or from width)
  double width = 0;             // picture width; 0: fitted
  double max_panel_height = 200;   // a panel's rows shrink to fit this (128-location memories)
};

// panels(): the cell grid of each panel, in order; time step t of panel p spans
// [x + t * cell, x + (t + 1) * cell). Throws ShapeError unless every panel is a matrix [T, Nm].
Picture weights(const std::vector<WeightsPanel>& panels, const WeightsOptions& opts = {});

}  // namespace attn::plot

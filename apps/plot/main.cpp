// attn-plot: turns the matrices and curves in attnlab HDF5 files into PNG, SVG or PDF figures (and
// mask-predict's refinement tables also into text).
// Adding a verb is one line here plus its function (verbs.hpp).
#include "common/cli.hpp"
#include "verbs.hpp"

int main(int argc, char** argv) {
  using namespace attn::plot_tool;
  // clang-format off
  return attn::cli::dispatch(kTool, argc, argv, {
      {"heatmap", cmd_heatmap, "an attention matrix (or all heads) with token labels and a colour bar"},
      {"weights", cmd_weights, "memory weightings over time with inputs and outputs (NTM figures)"},
      {"overlay", cmd_overlay, "attention maps blended over their image, one panel per word"},
      {"curve", cmd_curve, "line chart of one or more series (training curves), linear or log axes"},
      {"table", cmd_table, "a labelled matrix of numbers, cells shaded by value (memory-network hops)"},
      {"refinement", cmd_refinement, "mask-predict's output after every iteration, re-predicted tokens marked"},
  });
  // clang-format on
}

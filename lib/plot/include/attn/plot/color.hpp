// Colours and colour maps for the figures.
//
// A colour map turns a value scaled to [0, 1] into a colour. `viridis` (perceptually uniform,
// readable in grey-scale print and by colour-blind readers; van der Walt & Smith 2015) is the
// default for attention maps; `gray` (black to white) gives the look of Bahdanau et al. 2015,
// Figure 3 and Graves et al. 2014; `greys` is its reverse (white to black) and `blues` a light
// sequential map (ColorBrewer "Blues") under printed numbers. `palette(i)` gives the line colours
// of curves: the Okabe-Ito qualitative palette, distinguishable under colour-blindness.
#pragma once
#include <string>
#include <vector>

namespace attn::plot {

struct Rgb {
  double r = 0, g = 0, b = 0;   // each in [0, 1]
};

enum class Colormap { viridis, gray, greys, blues };

// "viridis", "gray", "greys", "blues"; anything else throws ConfigError listing the names.
Colormap colormap_from_name(const std::string& name);
const char* colormap_name(Colormap map);
std::vector<std::string> colormap_names();

// The colour at t in [0, 1] (clamped; NaN maps to 0), linearly interpolated between the map's
// control points. colormap_at(map, 1) is the map's top colour, drawn for the largest value.
Rgb colormap_at(Colormap map, double t);

// Relative luminance (ITU-R BT.709 weights on the sRGB values, a fast approximation): text on
// a cell is drawn white when the cell's luminance is below 0.5, near-black otherwise.
double luminance(const Rgb& c);

// Line colour number i of a qualitative palette (Okabe & Ito 2008), cycling after 8.
Rgb palette(int i);

}  // namespace attn::plot

// shapes: synthetic scenes of two coloured shapes on black, captioned with their spatial
// relation: "a red circle above a blue square". The colour and shape words of each object
// carry its box (captions.hpp), so attention can be scored per word.
//
// A scene (datasets/README.md, "shapes"): two objects of distinct (colour, shape), colours
// red, green, blue, yellow and shapes circle, square, triangle, the pair uniform; the object
// earlier in (colour, shape) order is named first (A), so that every scene has exactly one
// caption; a relation drawn uniformly from above, below, left of, right of; each object a size
// s ~ U{min_size..max_size} and a top-left corner uniform over the image; the positions are
// redrawn until the scene shows the relation. "A <rel> B" holds when, with the objects' ink
// boxes (tight boxes of their pixels) and their centres (cy, cx) = ((y0 + y1) / 2, (x0 + x1) / 2):
//   above:    A.y1 <= B.y0 and |dy| >= 2 |dx|      (dy = B.cy - A.cy, dx = B.cx - A.cx)
//   below:    B.y1 <= A.y0 and |dy| >= 2 |dx|
//   left of:  A.x1 <= B.x0 and |dx| >= 2 |dy|
//   right of: B.x1 <= A.x0 and |dx| >= 2 |dy|
// so the boxes never overlap, the relation's axis separates them, and the centre offset lies
// within about 27 degrees of that axis: no scene is a diagonal that could be read two ways.
// "left of" and "right of" are two words each ("left", "of").
//
// Rendering: a circle fills its s x s square's inscribed disc, a square the whole square, a
// triangle is isosceles with its apex at the top centre and its base the bottom edge. Each
// pixel's value is the colour times the fraction of 4 x 4 sub-pixel samples inside the shape
// (anti-aliased edges); the background is 0.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/datasets/captions.hpp"
#include "attn/datasets/splits.hpp"

namespace attn::datasets {

struct ShapesConfig {
  int64_t height = 48;
  int64_t width = 48;
  int64_t min_size = 10;   // >= 4
  int64_t max_size = 18;   // 2 * max_size <= min(height, width)
};

// The vocabulary's words after the reserved ids, in id order (4, 5, ...): "a", the relation
// words, the colours, the shapes.
std::vector<std::string> shapes_words();

// Throws ConfigError on inconsistent options (the message gives the numbers), or when a split
// cannot be filled with scenes unlike the earlier splits' (splits.hpp: no scene occurs in two
// splits). Split k draws from Rng(seed).fork(k). C = 3, T = 9 (8 words + EOS).
Splits<CaptionSplit> make_shapes(const ShapesConfig& cfg, const SplitSizes& sizes, uint64_t seed);

void write_shapes(io::File& file, const Splits<CaptionSplit>& splits);

}  // namespace attn::datasets

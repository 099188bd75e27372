// Attention over an image, in the style of Xu et al. 2015 (Show, Attend and Tell), Figure 3:
// one panel per generated word, titled with the word, showing the image with that step's
// attention map upsampled (bilinear) to the image size and blended over it. With the default
// grey map the attended regions light up and the rest darkens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/plot/color.hpp"
#include "attn/plot/picture.hpp"

namespace attn::plot {

struct OverlayOptions {
  std::string title;
  std::vector<std::string> words;   // one per attention map, or empty ("1", "2", ...)
  Colormap colormap = Colormap::gray;
  double alpha = 0.6;               // weight of the attention colour: (1 - a) image + a cmap(w)
  bool normalise_each = true;       // scale each map by its own maximum (else the global one)
  bool show_image = true;           // first panel: the image alone
  double panel = 0;                 // longer side of a panel in units; 0: automatic
  int columns = 0;                  // panels per row; 0: up to 6
};

// image: [C, IH, IW] (C = 1 or 3) or [IH, IW]; values in [0, 1], [0, 255], or anything else
// (then min-max scaled). maps: [T, h, w] (any h, w). Throws ShapeError on bad ranks or a word
// count that does not match T. panels(): the image panel (when shown), then one per map.
Picture overlay(const Tensor& image, const Tensor& maps, const OverlayOptions& opts = {});

// Bilinear resampling with half-pixel centres (as PyTorch's align_corners=False, clamped at
// the border): out[y, x] = a at source point ((y + 0.5) h / IH - 0.5, (x + 0.5) w / IW - 0.5).
// a: [h, w] -> [IH, IW], the image size given as H, W.
Tensor upsample_bilinear(const Tensor& a, int64_t H, int64_t W);

}  // namespace attn::plot

// Attention over images (Show, Attend and Tell figure style, see overlay.hpp): bilinear
// upsampling of each map to the image, alpha blending through a colour map, one panel per word.
#include "attn/plot/overlay.hpp"

#include <algorithm>
#include <cmath>

#include "attn/core/error.hpp"
#include "canvas.hpp"

namespace attn::plot {

namespace {

// The image as three [IH, IW] planes in [0, 1] (grey images repeat one plane).
struct Rgb32 {
  int64_t H = 0, W = 0;
  std::vector<float> r, g, b;
};

Rgb32 to_unit_rgb(const Tensor& image) {
  const Tensor im = image.rank() == 2 ? image.reshape({1, image.dim(0), image.dim(1)}) : image;
  const int64_t C = im.dim(0), H = im.dim(1), W = im.dim(2);
  const Range range = finite_range(im.data(), im.numel());
  // [0, 1] as is; [0, 255] as bytes; anything else (e.g. mean/std-normalised) min-max scaled.
  double lo = 0, hi = 1;
  if (range.lo < 0 || range.hi > 255) lo = range.lo, hi = range.hi;
  else if (range.hi > 1) hi = 255;
  Rgb32 out{H, W, {}, {}, {}};
  const float* d = im.data();
  auto plane = [&](int64_t c) {
    std::vector<float> p(static_cast<size_t>(H * W));
    for (int64_t i = 0; i < H * W; ++i) {
      const float v = d[c * H * W + i];
      p[static_cast<size_t>(i)] = std::isfinite(v) ? static_cast<float>(std::clamp((v - lo) / (hi - lo), 0.0, 1.0)) : 0.0f;
    }
    return p;
  };
  out.r = plane(0);
  out.g = C == 3 ? plane(1) : out.r;
  out.b = C == 3 ? plane(2) : out.r;
  return out;
}

}  // namespace

Tensor upsample_bilinear(const Tensor& a, int64_t H, int64_t W) {
  check_tensor(a, {kAny, kAny}, "upsample_bilinear: a [h, w]");
  const int64_t h = a.dim(0), w = a.dim(1);
  if (h == 0 || w == 0 || H <= 0 || W <= 0)
    throw ShapeError("upsample_bilinear: cannot resample " + to_string(a.shape()) + " to " + to_string({H, W}));
  // Source coordinate of each output row/column, its lower neighbour and weight.
  auto axis = [](int64_t n_out, int64_t n_in) {
    std::vector<int64_t> i0(static_cast<size_t>(n_out));
    std::vector<float> f(static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
      double s = (static_cast<double>(o) + 0.5) * static_cast<double>(n_in) / static_cast<double>(n_out) - 0.5;
      s = std::clamp(s, 0.0, static_cast<double>(n_in - 1));
      const int64_t lo = std::min(static_cast<int64_t>(s), n_in - 1);
      i0[static_cast<size_t>(o)] = lo;
      f[static_cast<size_t>(o)] = static_cast<float>(s - static_cast<double>(lo));
    }
    return std::pair{i0, f};
  };
  const auto [y0, fy] = axis(H, h);
  const auto [x0, fx] = axis(W, w);
  Tensor out({H, W});
  const float* src = a.data();
  float* dst = out.data();
  for (int64_t y = 0; y < H; ++y) {
    const int64_t ya = y0[static_cast<size_t>(y)], yb = std::min(ya + 1, h - 1);
    const float wy = fy[static_cast<size_t>(y)];
    for (int64_t x = 0; x < W; ++x) {
      const int64_t xa = x0[static_cast<size_t>(x)], xb = std::min(xa + 1, w - 1);
      const float wx = fx[static_cast<size_t>(x)];
      const float top = src[ya * w + xa] + wx * (src[ya * w + xb] - src[ya * w + xa]);
      const float bot = src[yb * w + xa] + wx * (src[yb * w + xb] - src[yb * w + xa]);
      dst[y * W + x] = top + wy * (bot - top);
    }
  }
  return out;
}

Picture overlay(const Tensor& image, const Tensor& maps, const OverlayOptions& opts) {
  if (image.rank() == 3) {
    check_tensor(image, {kAny, kAny, kAny}, "overlay: image [C, H, W]");
    if (image.dim(0) != 1 && image.dim(0) != 3)
      throw ShapeError("overlay: image [C, H, W] has shape " + to_string(image.shape()) + ", expected C = 1 or 3");
  } else {
    check_tensor(image, {kAny, kAny}, "overlay: image [C, H, W] or [H, W]");
  }
  check_tensor(maps, {kAny, kAny, kAny}, "overlay: maps [T, h, w]");
  const int64_t T = maps.dim(0);
  if (image.numel() == 0 || maps.numel() == 0)
    throw ShapeError("overlay: nothing to draw (image " + to_string(image.shape()) + ", maps " + to_string(maps.shape()) + ")");
  if (!opts.words.empty() && static_cast<int64_t>(opts.words.size()) != T)
    throw ShapeError("overlay: " + std::to_string(opts.words.size()) + " words for " + std::to_string(T) + " attention maps");
  if (!(opts.alpha >= 0 && opts.alpha <= 1)) throw ConfigError("overlay: alpha must be in [0, 1]");

  const Rgb32 img = to_unit_rgb(image);
  const int64_t H = img.H, W = img.W;
  const double global_max = finite_range(maps.data(), maps.numel()).hi;

  Canvas cv;
  const Font title_font{style::kTitleSize, true}, word_font{style::kAxisTitleSize};
  const int64_t n = T + (opts.show_image ? 1 : 0);
  const int64_t gc = opts.columns > 0 ? std::min<int64_t>(opts.columns, n) : std::min<int64_t>(n, 6);
  const int64_t gr = (n + gc - 1) / gc;
  const double side = opts.panel > 0 ? opts.panel : std::clamp(static_cast<double>(std::max(H, W)), 120.0, 224.0);
  const double scale = side / static_cast<double>(std::max(H, W));
  const double pw = std::round(static_cast<double>(W) * scale), ph = std::round(static_cast<double>(H) * scale);
  const double gap = 10, word_h = cv.text_height(word_font) + 4;
  const double title_h = opts.title.empty() ? 0 : cv.text_height(title_font) + 10;
  double Wd = 2 * style::kMargin + static_cast<double>(gc) * pw + static_cast<double>(gc - 1) * gap;
  if (!opts.title.empty()) Wd = std::max(Wd, 2 * style::kMargin + cv.text_width(opts.title, title_font));
  const double Hd = 2 * style::kMargin + title_h + static_cast<double>(gr) * (word_h + ph) + static_cast<double>(gr - 1) * gap;
  const double x_start = std::round((Wd - (static_cast<double>(gc) * pw + static_cast<double>(gc - 1) * gap)) / 2);
  if (!opts.title.empty())
    cv.text(opts.title, Wd / 2, style::kMargin, title_font, style::kText, HAlign::center, VAlign::top);

  std::vector<Rect> panels;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t t = opts.show_image ? k - 1 : k;   // the attention step, -1 for the bare image
    Tensor up;   // this step's map at the image's resolution
    double norm = 1;
    if (t >= 0) {
      up = upsample_bilinear(maps[t], H, W);
      norm = opts.normalise_each ? finite_range(maps[t].data(), maps[t].numel()).hi : global_max;
      if (!(norm > 0)) norm = 1;
    }
    // A fresh surface per panel: the recording keeps it alive, unchanged, until replayed.
    cairo_surface_t* surf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(W), static_cast<int>(H));
    if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) {
      cairo_surface_destroy(surf);
      throw ConfigError("overlay: cannot hold a " + std::to_string(H) + " x " + std::to_string(W) + " image");
    }
    const int stride = cairo_image_surface_get_stride(surf);
    unsigned char* data = cairo_image_surface_get_data(surf);
    const float* a = t >= 0 ? up.data() : nullptr;
    for (int64_t y = 0; y < H; ++y) {
      auto* row = reinterpret_cast<uint32_t*>(data + y * stride);
      for (int64_t x = 0; x < W; ++x) {
        const size_t i = static_cast<size_t>(y * W + x);
        double r = img.r[i], g = img.g[i], b = img.b[i];
        if (t >= 0) {
          const double w = std::isfinite(a[i]) ? std::clamp(a[i] / norm, 0.0, 1.0) : 0.0;
          const Rgb c = colormap_at(opts.colormap, w);
          r = (1 - opts.alpha) * r + opts.alpha * c.r;
          g = (1 - opts.alpha) * g + opts.alpha * c.g;
          b = (1 - opts.alpha) * b + opts.alpha * c.b;
        }
        auto byte = [](double v) { return static_cast<uint32_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
        row[x] = (byte(r) << 16) | (byte(g) << 8) | byte(b);
      }
    }
    cairo_surface_mark_dirty(surf);

    const Rect rect{x_start + static_cast<double>(k % gc) * (pw + gap),
                    std::round(style::kMargin + title_h + static_cast<double>(k / gc) * (word_h + ph + gap) + word_h), pw, ph};
    const std::string word = t < 0 ? "" : opts.words.empty() ? std::to_string(t + 1) : opts.words[static_cast<size_t>(t)];
    cv.text(cv.fit_text(word, word_font, pw), rect.x + pw / 2, rect.y - 4, word_font, style::kText, HAlign::center,
            VAlign::bottom);
    cairo_t* cr = cv.cr();
    cairo_save(cr);
    cairo_translate(cr, rect.x, rect.y);
    cairo_scale(cr, pw / static_cast<double>(W), ph / static_cast<double>(H));
    cairo_set_source_surface(cr, surf, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_GOOD);
    cairo_pattern_set_extend(cairo_get_source(cr), CAIRO_EXTEND_PAD);
    cairo_rectangle(cr, 0, 0, static_cast<double>(W), static_cast<double>(H));
    cairo_fill(cr);
    cairo_restore(cr);
    cairo_surface_destroy(surf);
    cv.stroke_rect(rect, style::kAxis, 0.6);
    panels.push_back(rect);
  }
  return cv.finish(Wd, Hd, std::move(panels));
}

}  // namespace attn::plot

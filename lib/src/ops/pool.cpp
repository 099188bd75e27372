// Max and average pooling: one loop nest per (b, c) plane, planes spread over the threads.
#include "attn/ops/pool.hpp"

#include "attn/core/threading.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "attn/core/flops.hpp"
#include "pool_methods.hpp"
#include "vector_clones.hpp"

namespace attn::ops {

PoolGeometry pool_detail::make_geometry(const std::string& op, const Shape& x, PoolOptions o, bool one_d) {
  const auto shown = [&](Size2 v) { return one_d ? std::to_string(v.w) : to_string(v); };
  if (one_d) {
    for (auto [field, v] : {std::pair{"kernel", o.kernel}, std::pair{"stride", o.stride},
                            std::pair{"padding", o.padding}})
      if (v.h != v.w)
        throw ConfigError(op + ": " + field + " must be one value for 1-D pooling, got " +
                          to_string(v));
    o = {Size2(1, o.kernel.w), Size2(1, o.stride.w ? o.stride.w : o.kernel.w), Size2(0, o.padding.w)};
  }
  if (o.kernel.h < 1 || o.kernel.w < 1)
    throw ConfigError(op + ": kernel must be >= 1, got " + shown(o.kernel));
  if (o.stride.h == 0 && o.stride.w == 0) o.stride = o.kernel;
  if (o.stride.h < 1 || o.stride.w < 1)
    throw ConfigError(op + ": stride must be >= 1 (or 0 for the kernel size), got " + shown(o.stride));
  if (o.padding.h < 0 || o.padding.w < 0 || 2 * o.padding.h > o.kernel.h ||
      2 * o.padding.w > o.kernel.w)
    throw ConfigError(op + ": padding must be between 0 and half the kernel " + shown(o.kernel) +
                      ", got " + shown(o.padding));
  PoolGeometry g;
  g.B = x[0], g.C = x[1], g.IH = x[2], g.IW = x[3];
  g.kernel = o.kernel, g.stride = o.stride, g.padding = o.padding;
  const auto out_size = [&](const char* axis, int64_t in, int64_t k, int64_t pad, int64_t stride) {
    if (k > in + 2 * pad)
      throw ShapeError(op + ": a kernel " + axis + " of " + std::to_string(k) +
                       " does not fit the input " + axis + " " + std::to_string(in) +
                       " with padding " + std::to_string(pad));
    return (in + 2 * pad - k) / stride + 1;
  };
  g.OH = out_size("height", g.IH, g.kernel.h, g.padding.h, g.stride.h);
  g.OW = out_size(one_d ? "length" : "width", g.IW, g.kernel.w, g.padding.w, g.stride.w);
  return g;
}

namespace {

using pool_detail::first_max4;
using pool_detail::make_geometry;
using pool_detail::window_gradient;

// One output row of a 2 x 2 stride-2 max pooling (every CNN's pool2) from input rows r0 and r1:
// y[j] the window's first maximum (first_max4: a NaN wins), a[j] its index base + 2j + (0, 1, IW
// or IW + 1). Selects instead of branches, so that the loop vectorises.
ATTN_VECTOR_CLONES void max_pool2_row(const float* r0, const float* r1, int64_t OW, int32_t base, int32_t IW,
                                      float* y, int32_t* a) {
  for (int64_t j = 0; j < OW; ++j) {
    float m;
    int32_t k;
    first_max4(r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1], IW, m, k);
    y[j] = m;
    a[j] = base + static_cast<int32_t>(2 * j) + k;
  }
}

// The gradient of max_pool2_row: input rows r0 and r1 (columns 0 .. 2 OW - 1) get dy[j] at each
// window's maximum and 0 elsewhere, every element written once (no zero fill, no scatter).
ATTN_VECTOR_CLONES void max_unpool2_row(const float* dy, const int32_t* a, int64_t OW, int32_t base, int32_t IW,
                                        float* r0, float* r1) {
  for (int64_t j = 0; j < OW; ++j)
    window_gradient(dy[j], a[j] - base - static_cast<int32_t>(2 * j), IW, r0[2 * j], r0[2 * j + 1], r1[2 * j],
                    r1[2 * j + 1]);
}

int64_t window_reads(const PoolGeometry& g) { return g.B * g.C * g.OH * g.OW * g.kernel.h * g.kernel.w; }

// The window of output (i, j) clipped to the input: rows [h0, h1), columns [w0, w1).
struct Window {
  int64_t h0, h1, w0, w1;
};
inline Window window(const PoolGeometry& g, int64_t i, int64_t j) {
  const int64_t h = i * g.stride.h - g.padding.h, w = j * g.stride.w - g.padding.w;
  return {std::max<int64_t>(h, 0), std::min(h + g.kernel.h, g.IH), std::max<int64_t>(w, 0),
          std::min(w + g.kernel.w, g.IW)};
}

bool is_pool2(const PoolGeometry& g) {
  return g.kernel == Size2(2) && g.stride == Size2(2) && g.padding == Size2(0);
}

Tensor max_forward(const PoolGeometry& g, const Tensor& x, MaxPoolCache* cache) {
  Tensor y = Tensor::uninitialized({g.B, g.C, g.OH, g.OW});   // both written at every output
  Tensor argmax = Tensor::uninitialized({g.B, g.C, g.OH, g.OW}, DType::i32);
  const float* X = x.data();
  float* Y = y.data();
  int32_t* A = argmax.idata();
  // 2 x 2 windows at stride 2 without padding: the same comparisons in the same order, a row at once.
  const bool pool2 = is_pool2(g);
#pragma omp parallel for schedule(static) if (window_reads(g) >= kParallelMinElements)
  for (int64_t plane = 0; plane < g.B * g.C; ++plane) {
    const float* in = X + plane * g.IH * g.IW;
    if (pool2) {
      for (int64_t i = 0; i < g.OH; ++i)
        max_pool2_row(in + 2 * i * g.IW, in + (2 * i + 1) * g.IW, g.OW, static_cast<int32_t>(2 * i * g.IW),
                      static_cast<int32_t>(g.IW), Y + (plane * g.OH + i) * g.OW, A + (plane * g.OH + i) * g.OW);
      continue;
    }
    for (int64_t i = 0; i < g.OH; ++i)
      for (int64_t j = 0; j < g.OW; ++j) {
        const Window w = window(g, i, j);
        float best = -std::numeric_limits<float>::infinity();
        int64_t arg = w.h0 * g.IW + w.w0;
        for (int64_t ih = w.h0; ih < w.h1; ++ih)
          for (int64_t iw = w.w0; iw < w.w1; ++iw) {
            const float v = in[ih * g.IW + iw];
            if (v > best || std::isnan(v)) best = v, arg = ih * g.IW + iw;
          }
        const int64_t k = (plane * g.OH + i) * g.OW + j;
        Y[k] = best;
        A[k] = static_cast<int32_t>(arg);
      }
  }
  if (cache) *cache = {g, argmax};
  return y;
}

Tensor max_backward(const PoolGeometry& g, const Tensor& dy, const Tensor& argmax) {
  const bool pool2 = is_pool2(g);
  Tensor dx = pool2 ? Tensor::uninitialized({g.B, g.C, g.IH, g.IW}) : Tensor({g.B, g.C, g.IH, g.IW});
  const float* dY = dy.data();
  const int32_t* A = argmax.idata();
  float* dX = dx.data();
  const int64_t P = g.OH * g.OW;
#pragma omp parallel for schedule(static) if (g.B * g.C * P >= kParallelMinElements)
  for (int64_t plane = 0; plane < g.B * g.C; ++plane) {
    float* out = dX + plane * g.IH * g.IW;
    if (!pool2) {
      for (int64_t k = plane * P; k < (plane + 1) * P; ++k) out[A[k]] += dY[k];
      continue;
    }
    for (int64_t i = 0; i < g.OH; ++i) {
      float *r0 = out + 2 * i * g.IW, *r1 = r0 + g.IW;
      const int64_t k = (plane * g.OH + i) * g.OW;
      max_unpool2_row(dY + k, A + k, g.OW, static_cast<int32_t>(2 * i * g.IW), static_cast<int32_t>(g.IW), r0, r1);
      std::fill(r0 + 2 * g.OW, r0 + g.IW, 0.0f);   // an odd width's last column, in no window
      std::fill(r1 + 2 * g.OW, r1 + g.IW, 0.0f);
    }
    std::fill(out + 2 * g.OH * g.IW, out + g.IH * g.IW, 0.0f);   // an odd height's last row
  }
  return dx;
}

Tensor avg_forward(const PoolGeometry& g, const Tensor& x, AvgPoolCache* cache) {
  Tensor y = Tensor::uninitialized({g.B, g.C, g.OH, g.OW});   // written at every output
  const float* X = x.data();
  float* Y = y.data();
  const float scale = 1.0f / static_cast<float>(g.kernel.h * g.kernel.w);
#pragma omp parallel for schedule(static) if (window_reads(g) >= kParallelMinElements)
  for (int64_t plane = 0; plane < g.B * g.C; ++plane) {
    const float* in = X + plane * g.IH * g.IW;
    for (int64_t i = 0; i < g.OH; ++i)
      for (int64_t j = 0; j < g.OW; ++j) {
        const Window w = window(g, i, j);
        float sum = 0.0f;
        for (int64_t ih = w.h0; ih < w.h1; ++ih)
          for (int64_t iw = w.w0; iw < w.w1; ++iw) sum += in[ih * g.IW + iw];
        Y[(plane * g.OH + i) * g.OW + j] = sum * scale;
      }
  }
  flops::add(window_reads(g));
  if (cache) *cache = {g};
  return y;
}

Tensor avg_backward(const PoolGeometry& g, const Tensor& dy) {
  Tensor dx({g.B, g.C, g.IH, g.IW});
  const float* dY = dy.data();
  float* dX = dx.data();
  const float scale = 1.0f / static_cast<float>(g.kernel.h * g.kernel.w);
#pragma omp parallel for schedule(static) if (window_reads(g) >= kParallelMinElements)
  for (int64_t plane = 0; plane < g.B * g.C; ++plane) {
    float* out = dX + plane * g.IH * g.IW;
    for (int64_t i = 0; i < g.OH; ++i)
      for (int64_t j = 0; j < g.OW; ++j) {
        const Window w = window(g, i, j);
        const float d = dY[(plane * g.OH + i) * g.OW + j] * scale;
        for (int64_t ih = w.h0; ih < w.h1; ++ih)
          for (int64_t iw = w.w0; iw < w.w1; ++iw) out[ih * g.IW + iw] += d;
      }
  }
  flops::add(window_reads(g));
  return dx;
}

Tensor as_4d(const Tensor& t) { return t.reshape({t.dim(0), t.dim(1), 1, t.dim(2)}); }
Tensor as_3d(const Tensor& t) { return t.reshape({t.dim(0), t.dim(1), t.dim(3)}); }

}  // namespace

Tensor max_pool2d_forward(const Tensor& x, const PoolOptions& options, MaxPoolCache* cache) {
  check_tensor(x, {kAny, kAny, kAny, kAny}, "max_pool2d: x [B, C, IH, IW]");
  return max_forward(make_geometry("max_pool2d", x.shape(), options, false), x, cache);
}

Tensor max_pool2d_backward(const Tensor& dy, const MaxPoolCache& cache) {
  const PoolGeometry& g = cache.geometry;
  check_tensor(dy, {g.B, g.C, g.OH, g.OW}, "max_pool2d_backward: dy [B, C, OH, OW]");
  return max_backward(g, dy, cache.argmax);
}

Tensor avg_pool2d_forward(const Tensor& x, const PoolOptions& options, AvgPoolCache* cache) {
  check_tensor(x, {kAny, kAny, kAny, kAny}, "avg_pool2d: x [B, C, IH, IW]");
  return avg_forward(make_geometry("avg_pool2d", x.shape(), options, false), x, cache);
}

Tensor avg_pool2d_backward(const Tensor& dy, const AvgPoolCache& cache) {
  const PoolGeometry& g = cache.geometry;
  check_tensor(dy, {g.B, g.C, g.OH, g.OW}, "avg_pool2d_backward: dy [B, C, OH, OW]");
  return avg_backward(g, dy);
}

Tensor max_pool1d_forward(const Tensor& x, const PoolOptions& options, MaxPoolCache* cache) {
  check_tensor(x, {kAny, kAny, kAny}, "max_pool1d: x [B, C, L]");
  const Tensor x4 = as_4d(x);
  return as_3d(max_forward(make_geometry("max_pool1d", x4.shape(), options, true), x4, cache));
}

Tensor max_pool1d_backward(const Tensor& dy, const MaxPoolCache& cache) {
  const PoolGeometry& g = cache.geometry;
  check_tensor(dy, {g.B, g.C, g.OW}, "max_pool1d_backward: dy [B, C, OL]");
  return as_3d(max_backward(g, as_4d(dy), cache.argmax));
}

Tensor avg_pool1d_forward(const Tensor& x, const PoolOptions& options, AvgPoolCache* cache) {
  check_tensor(x, {kAny, kAny, kAny}, "avg_pool1d: x [B, C, L]");
  const Tensor x4 = as_4d(x);
  return as_3d(avg_forward(make_geometry("avg_pool1d", x4.shape(), options, true), x4, cache));
}

Tensor avg_pool1d_backward(const Tensor& dy, const AvgPoolCache& cache) {
  const PoolGeometry& g = cache.geometry;
  check_tensor(dy, {g.B, g.C, g.OW}, "avg_pool1d_backward: dy [B, C, OL]");
  return as_3d(avg_backward(g, as_4d(dy)));
}

}  // namespace attn::ops

// Convolution through im2col + GEMM, chunk by chunk of each image, and col2im for the input
// gradient; or through Winograd's F(2 x 2, 3 x 3) (conv_winograd.cpp), chosen here.
#include "attn/ops/conv.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "attn/blas/blas.hpp"
#include "attn/core/flops.hpp"
#include "conv_methods.hpp"
#include "vector_clones.hpp"

namespace attn::ops {

// Appended piecewise: `"(" + std::to_string(..)` trips GCC 12's -Wrestrict (bug 105329).
std::string to_string(Size2 s) {
  std::string out = "(";
  out += std::to_string(s.h);
  out += ", ";
  out += std::to_string(s.w);
  return out + ")";
}

using conv_detail::add_group_sums;
using conv_detail::make_geometry;
using conv_detail::kGradGroups;
using conv_detail::spread_over_threads;

namespace {

using blas::Trans;

// ---- im2col in chunks ------------------------------------------------------------------------
// The column matrix is never built for the whole batch (C*KH*KW times the input, 118 MB for an
// ImageNet stem on 16 images): one chunk of an image's output positions at a time is unfolded
// into a per-thread buffer that stays in cache while its GEMM reads it, and the GEMM writes its
// [O, chunk] result straight into y[b] (row stride OH*OW), which is already y's [B, O, OH, OW]
// layout: no permutation pass, no batch-sized scratch.

// About this many floats per chunk's column matrix (512 KiB: the L2 size of current x86 cores)...
constexpr int64_t kChunkFloats = int64_t{1} << 17;
// ...but at least this many positions per chunk, so that every GEMM stays efficiently wide.
constexpr int64_t kMinChunk = 256;

struct Chunks {
  int64_t size = 0, count = 0;   // positions per chunk (the last may be shorter), chunks per image
};

Chunks chunks_of(const ConvGeometry& g) {
  const int64_t P = g.OH * g.OW, CKK = g.C * g.KH * g.KW;
  const int64_t want = std::min(P, std::max(kMinChunk, kChunkFloats / std::max<int64_t>(CKK, 1)));
  const int64_t count = (P + want - 1) / want;
  return {(P + count - 1) / count, count};   // equal chunks
}

// For kernel column q, the output columns j whose input column iw = j sw + q dw - pw falls
// inside [0, IW): [lo, hi). Outside it im2col writes padding zeros and col2im adds nothing.
std::pair<int64_t, int64_t> valid_columns(const ConvGeometry& g, int64_t q) {
  const int64_t off = q * g.dilation.w - g.padding.w, sw = g.stride.w;
  const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
  const int64_t hi = g.IW - off <= 0 ? 0 : std::min(g.OW, (g.IW - off + sw - 1) / sw);
  return {std::min(lo, g.OW), std::max(hi, std::min(lo, g.OW))};
}

// dst[j] = src[j * S] (im2col) and dst[j * S] += src[j] (col2im) for j < n. Stride 1 and 2
// (the stems of image models) get a compile-time stride so that the loops vectorise. Always
// inlined, so that they are compiled into each clone of im2col and col2im.
template <int64_t S>
[[gnu::always_inline]] inline void gather(const float* src, float* dst, int64_t n, int64_t stride) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) dst[j] = src[j * (S ? S : stride)];
}
template <int64_t S>
[[gnu::always_inline]] inline void scatter_add(const float* src, float* dst, int64_t n, int64_t stride) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) dst[j * (S ? S : stride)] += src[j];
}

// A chunk [p0, p1) of output positions walked one output row (i) at a time, for kernel
// column q: the row's part of the chunk is the w positions from chunk offset k on, and of
// those, [a, e) (counted from k) read inside the input, the first at input column iw.
struct ChunkRow {
  int64_t i, k, w, a, e, iw;
};
[[gnu::always_inline]] inline ChunkRow chunk_row(const ConvGeometry& g, int64_t pos, int64_t p0, int64_t p1,
                                                 std::pair<int64_t, int64_t> valid, int64_t off) {
  const int64_t i = pos / g.OW, j0 = pos % g.OW, j1 = std::min(g.OW, j0 + (p1 - pos));
  const int64_t a = std::clamp(valid.first, j0, j1), e = std::clamp(valid.second, a, j1);
  return {i, pos - p0, j1 - j0, a - j0, e - j0, a * g.stride.w + off};
}

// col[(c, p, q), k] = x_b[c, ih, iw] for position p0 + k = (i, j), ih = i sh - ph + p dh,
// iw = j sw - pw + q dw, or 0 in the padding.   x_b: [C, IH, IW]   col: [C*KH*KW, p1 - p0].
// Overwrites col. The border is handled by ranges, so the inner loops are plain copies.
// im2col and col2im are cloned for AVX2 (vector_clones.hpp): at stride 2, in SSE2, they cost a
// visible share of a stem convolution's time (bench/README.md, "Convolution: im2col chunks,
// Winograd, conv0 fused with its pooling").
ATTN_VECTOR_CLONES
void im2col(const ConvGeometry& g, const float* x_b, int64_t p0, int64_t p1, float* col) {
  const int64_t n = p1 - p0, sw = g.stride.w;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t p = 0; p < g.KH; ++p)
      for (int64_t q = 0; q < g.KW; ++q) {
        float* out = col + ((c * g.KH + p) * g.KW + q) * n;
        const float* plane = x_b + c * g.IH * g.IW;
        const auto valid = valid_columns(g, q);
        const int64_t off = q * g.dilation.w - g.padding.w;
        for (int64_t pos = p0; pos < p1;) {
          const ChunkRow r = chunk_row(g, pos, p0, p1, valid, off);
          pos += r.w;
          float* dst = out + r.k;
          const int64_t ih = r.i * g.stride.h - g.padding.h + p * g.dilation.h;
          if (ih < 0 || ih >= g.IH) {
            std::fill(dst, dst + r.w, 0.0f);
            continue;
          }
          std::fill(dst, dst + r.a, 0.0f);
          const float* src = plane + ih * g.IW + r.iw;
          if (sw == 1)
            gather<1>(src, dst + r.a, r.e - r.a, sw);
          else if (sw == 2)
            gather<2>(src, dst + r.a, r.e - r.a, sw);
          else
            gather<0>(src, dst + r.a, r.e - r.a, sw);
          std::fill(dst + r.e, dst + r.w, 0.0f);
        }
      }
}

// The adjoint of im2col on the same chunk: dx_b[c, ih, iw] += every dcol entry that im2col
// copied from there.
ATTN_VECTOR_CLONES
void col2im(const ConvGeometry& g, const float* dcol, int64_t p0, int64_t p1, float* dx_b) {
  const int64_t n = p1 - p0, sw = g.stride.w;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t p = 0; p < g.KH; ++p)
      for (int64_t q = 0; q < g.KW; ++q) {
        const float* in = dcol + ((c * g.KH + p) * g.KW + q) * n;
        float* plane = dx_b + c * g.IH * g.IW;
        const auto valid = valid_columns(g, q);
        const int64_t off = q * g.dilation.w - g.padding.w;
        for (int64_t pos = p0; pos < p1;) {
          const ChunkRow r = chunk_row(g, pos, p0, p1, valid, off);
          pos += r.w;
          const int64_t ih = r.i * g.stride.h - g.padding.h + p * g.dilation.h;
          if (ih < 0 || ih >= g.IH || r.e == r.a) continue;
          const float* src = in + r.k + r.a;
          float* dst = plane + ih * g.IW + r.iw;
          if (sw == 1)
            scatter_add<1>(src, dst, r.e - r.a, sw);
          else if (sw == 2)
            scatter_add<2>(src, dst, r.e - r.a, sw);
          else
            scatter_add<0>(src, dst, r.e - r.a, sw);
        }
      }
}

// Whether this convolution runs as Winograd's F(2 x 2, 3 x 3) (see ConvAlgorithm).
bool choose_winograd(const std::string& op, const ConvGeometry& g, ConvAlgorithm algorithm) {
  const bool applies = conv_detail::winograd_applies(g);
  if (algorithm == ConvAlgorithm::kWinograd && !applies)
    throw ConfigError(op + ": the Winograd algorithm takes a 3 x 3 kernel at stride 1, dilation 1 and "
                      "padding <= 2, got kernel " + to_string(Size2(g.KH, g.KW)) + ", stride " +
                      to_string(g.stride) + ", dilation " + to_string(g.dilation) + ", padding " +
                      to_string(g.padding));
  if (algorithm == ConvAlgorithm::kAuto) return applies && g.C >= 16 && g.O >= 16;
  return algorithm == ConvAlgorithm::kWinograd;
}

Tensor conv_forward(const std::string& op, const Tensor& x, const Tensor& W, const Tensor& b,
                    const ConvOptions& options, ConvCache* cache) {
  ConvGeometry g = make_geometry(op, x.shape(), W.shape(), options);
  g.winograd = choose_winograd(op, g, options.algorithm);
  if (cache) *cache = {x, g};
  if (g.winograd) return conv_detail::winograd_forward(g, x, W, b);
  const int64_t P = g.OH * g.OW, CKK = g.C * g.KH * g.KW;
  const Chunks ch = chunks_of(g);
  flops::add_sequential_steps(1);   // every output position at once
  Tensor y = Tensor::uninitialized({g.B, g.O, g.OH, g.OW});
  const float* xp = x.data();
  const float* Wp = W.data();
  const float* bias = b.defined() ? b.data() : nullptr;
  float* yp = y.data();
  const int64_t tasks = g.B * ch.count;
#pragma omp parallel if (spread_over_threads(tasks))
  {
    Tensor col = Tensor::uninitialized({CKK * ch.size});
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t n = task / ch.count, p0 = task % ch.count * ch.size, p1 = std::min(P, p0 + ch.size);
      im2col(g, xp + n * g.C * g.IH * g.IW, p0, p1, col.data());
      float* yb = yp + n * g.O * P + p0;
      blas::gemm(Trans::N, Trans::N, g.O, p1 - p0, CKK, 1.0f, Wp, CKK, col.data(), p1 - p0, 0.0f, yb, P);
      if (bias)
        for (int64_t o = 0; o < g.O; ++o)
          for (int64_t k = 0; k < p1 - p0; ++k) yb[o * P + k] += bias[o];
    }
  }
  return y;
}

// Per image n (images in kGradGroups fixed groups, each group on one thread) and chunk:
// im2col, dW_group += dy_n[:, chunk] col^T, dcol = W^T dy_n[:, chunk] (into the same buffer),
// col2im into dx_n (neither without input_grad); db_group from the same dy rows. The group sums
// are added in order.
Tensor conv_backward(const Tensor& dy, const Tensor& W, const ConvGeometry& g, const Tensor& x,
                     Tensor& dW, Tensor& db, bool input_grad = true) {
  if (g.winograd) return conv_detail::winograd_backward(g, x, W, dy, dW, db, input_grad);
  const int64_t P = g.OH * g.OW, CKK = g.C * g.KH * g.KW, plane = g.C * g.IH * g.IW;
  const Chunks ch = chunks_of(g);
  flops::add_sequential_steps(1);
  const int64_t groups = std::min(g.B, kGradGroups);
  Tensor dW_parts({groups, g.O * CKK}), db_parts({groups, g.O});
  Tensor dx = input_grad ? Tensor::uninitialized({g.B, g.C, g.IH, g.IW}) : Tensor();
  const float *xp = x.data(), *Wp = W.data(), *dyp = dy.data();
  float *dxp = input_grad ? dx.data() : nullptr, *dWp = dW_parts.data(), *dbp = db_parts.data();
#pragma omp parallel if (spread_over_threads(groups))
  {
    Tensor col = Tensor::uninitialized({CKK * ch.size});
#pragma omp for schedule(dynamic)
    for (int64_t grp = 0; grp < groups; ++grp) {
      float* dWg = dWp + grp * g.O * CKK;
      float* dbg = dbp + grp * g.O;
      for (int64_t n = grp * g.B / groups; n < (grp + 1) * g.B / groups; ++n) {
        float* dxn = input_grad ? dxp + n * plane : nullptr;
        if (input_grad) std::fill(dxn, dxn + plane, 0.0f);
        for (int64_t p0 = 0; p0 < P; p0 += ch.size) {
          const int64_t p1 = std::min(P, p0 + ch.size), m = p1 - p0;
          const float* dyn = dyp + n * g.O * P + p0;   // [O, m] with row stride OH*OW
          im2col(g, xp + n * plane, p0, p1, col.data());
          blas::gemm(Trans::N, Trans::T, g.O, CKK, m, 1.0f, dyn, P, col.data(), m, 1.0f, dWg, CKK);
          for (int64_t o = 0; o < g.O; ++o) {
            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
            for (int64_t k = 0; k < m; ++k) sum += dyn[o * P + k];
            dbg[o] += sum;
          }
          if (!input_grad) continue;
          blas::gemm(Trans::T, Trans::N, CKK, m, g.O, 1.0f, Wp, CKK, dyn, P, 0.0f, col.data(), m);
          col2im(g, col.data(), p0, p1, dxn);
        }
      }
    }
  }
  add_group_sums(dW_parts, dW.data());
  if (db.defined()) add_group_sums(db_parts, db.data());
  return dx;
}

void check_one_value(const ConvOptions& o, const std::string& op) {
  const auto check = [&](const char* field, Size2 v) {
    if (v.h != v.w)
      throw ConfigError(op + ": " + field + " must be one value for a 1-D convolution, got " +
                        to_string(v));
  };
  check("stride", o.stride);
  check("padding", o.padding);
  check("dilation", o.dilation);
}

// The 2-D options of a 1-D convolution seen as [B, C, 1, IW].
ConvOptions as_2d(const ConvOptions& o) {
  return {Size2(1, o.stride.w), Size2(0, o.padding.w), Size2(1, o.dilation.w), o.algorithm};
}

}  // namespace

ConvGeometry conv_detail::make_geometry(const std::string& op, const Shape& x, const Shape& W,
                                        const ConvOptions& o) {
  const bool one_d = op == "conv1d";
  const auto shown = [&](Size2 v) { return one_d ? std::to_string(v.w) : to_string(v); };
  const auto bad = [&](const char* field, Size2 v, const char* want) {
    return ConfigError(op + ": " + field + " must be " + want + ", got " + shown(v));
  };
  if (o.stride.h < 1 || o.stride.w < 1) throw bad("stride", o.stride, ">= 1");
  if (o.padding.h < 0 || o.padding.w < 0) throw bad("padding", o.padding, ">= 0");
  if (o.dilation.h < 1 || o.dilation.w < 1) throw bad("dilation", o.dilation, ">= 1");
  ConvGeometry g;
  g.B = x[0], g.C = x[1], g.IH = x[2], g.IW = x[3];
  g.O = W[0], g.KH = W[2], g.KW = W[3];
  g.stride = o.stride, g.padding = o.padding, g.dilation = o.dilation;
  const auto out_size = [&](const char* axis, int64_t in, int64_t k, int64_t pad, int64_t dil,
                            int64_t stride) {
    const int64_t extent = dil * (k - 1) + 1;   // input positions one kernel window covers
    if (k < 1 || extent > in + 2 * pad)
      throw ShapeError(op + ": a kernel " + axis + " of " + std::to_string(k) + " (dilation " +
                       std::to_string(dil) + ") does not fit the input " + axis + " " +
                       std::to_string(in) + " with padding " + std::to_string(pad));
    return (in + 2 * pad - extent) / stride + 1;
  };
  g.OH = out_size("height", g.IH, g.KH, g.padding.h, g.dilation.h, g.stride.h);
  g.OW = out_size(one_d ? "length" : "width", g.IW, g.KW, g.padding.w, g.dilation.w, g.stride.w);
  return g;
}

void conv_detail::add_group_sums(const Tensor& parts, float* out) {
  const int64_t groups = parts.dim(0), size = parts.dim(1);
  const float* p = parts.data();
#pragma omp parallel for schedule(static) if (groups * size >= kParallelMinElements)
  for (int64_t e = 0; e < size; ++e) {
    float sum = 0.0f;
    for (int64_t grp = 0; grp < groups; ++grp) sum += p[grp * size + e];
    out[e] += sum;
  }
}

Tensor conv2d_forward(const Tensor& x, const Tensor& W, const Tensor& b, const ConvOptions& options,
                      ConvCache* cache) {
  check_tensor(x, {kAny, kAny, kAny, kAny}, "conv2d: x [B, C, IH, IW]");
  check_tensor(W, {kAny, x.dim(1), kAny, kAny}, "conv2d: W [O, C, KH, KW]");
  if (b.defined()) check_tensor(b, {W.dim(0)}, "conv2d: b [O]");
  return conv_forward("conv2d", x, W, b, options, cache);
}

Tensor conv2d_backward(const Tensor& dy, const Tensor& W, const ConvCache& cache, Tensor& dW,
                       Tensor& db, bool input_grad) {
  const ConvGeometry& g = cache.geometry;
  check_tensor(dy, {g.B, g.O, g.OH, g.OW}, "conv2d_backward: dy [B, O, OH, OW]");
  check_tensor(W, {g.O, g.C, g.KH, g.KW}, "conv2d_backward: W [O, C, KH, KW]");
  check_tensor(dW, {g.O, g.C, g.KH, g.KW}, "conv2d_backward: dW [O, C, KH, KW]");
  if (db.defined()) check_tensor(db, {g.O}, "conv2d_backward: db [O]");
  return conv_backward(dy, W, g, cache.x, dW, db, input_grad);
}

Tensor conv1d_forward(const Tensor& x, const Tensor& W, const Tensor& b, const ConvOptions& options,
                      ConvCache* cache) {
  check_tensor(x, {kAny, kAny, kAny}, "conv1d: x [B, C, L]");
  check_tensor(W, {kAny, x.dim(1), kAny}, "conv1d: W [O, C, K]");
  if (b.defined()) check_tensor(b, {W.dim(0)}, "conv1d: b [O]");
  check_one_value(options, "conv1d");
  const Tensor x4 = x.reshape({x.dim(0), x.dim(1), 1, x.dim(2)});
  const Tensor W4 = W.reshape({W.dim(0), W.dim(1), 1, W.dim(2)});
  const Tensor y = conv_forward("conv1d", x4, W4, b, as_2d(options), cache);
  return y.reshape({y.dim(0), y.dim(1), y.dim(3)});
}

Tensor conv1d_backward(const Tensor& dy, const Tensor& W, const ConvCache& cache, Tensor& dW,
                       Tensor& db) {
  const ConvGeometry& g = cache.geometry;
  check_tensor(dy, {g.B, g.O, g.OW}, "conv1d_backward: dy [B, O, OL]");
  check_tensor(W, {g.O, g.C, g.KW}, "conv1d_backward: W [O, C, K]");
  check_tensor(dW, {g.O, g.C, g.KW}, "conv1d_backward: dW [O, C, K]");
  if (db.defined()) check_tensor(db, {g.O}, "conv1d_backward: db [O]");
  Tensor dW4 = dW.reshape({g.O, g.C, 1, g.KW});   // a view: the += lands in dW
  const Tensor dx = conv_backward(dy.reshape({g.B, g.O, 1, g.OW}), W.reshape({g.O, g.C, 1, g.KW}),
                                  g, cache.x, dW4, db);
  return dx.reshape({g.B, g.C, g.IW});
}

}  // namespace attn::ops

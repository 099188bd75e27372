// Convolution through im2col + one GEMM over the whole batch, and col2im for the input gradient.
#include "attn/ops/conv.hpp"

#include "attn/core/threading.hpp"

#include <string>

#include "attn/blas/blas.hpp"
#include "attn/core/flops.hpp"

namespace attn::ops {

// Appended piecewise: `"(" + std::to_string(..)` trips GCC 12's -Wrestrict (bug 105329).
std::string to_string(Size2 s) {
  std::string out = "(";
  out += std::to_string(s.h);
  out += ", ";
  out += std::to_string(s.w);
  return out + ")";
}
namespace {

using blas::Trans;


// Checks the options and fills in the output size; `op` names the public function in messages,
// which speak of one length for conv1d (seen here as [B, C, 1, L]).
ConvGeometry make_geometry(const std::string& op, const Shape& x, const Shape& W,
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

// col[(c, p, q), b*P + i*OW + j] = x[b, c, i sh - ph + p dh, j sw - pw + q dw], or 0 in the
// padding.   x: [B, C, IH, IW]   col: [C*KH*KW, B*P], P = OH*OW. Overwrites col.
void im2col(const ConvGeometry& g, const float* x, float* col) {
  const int64_t P = g.OH * g.OW, rows = g.C * g.KH * g.KW;
#pragma omp parallel for collapse(2) schedule(static) if (rows * g.B * P >= kParallelMinElements)
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t b = 0; b < g.B; ++b) {
      const int64_t c = row / (g.KH * g.KW), p = row / g.KW % g.KH, q = row % g.KW;
      const float* plane = x + (b * g.C + c) * g.IH * g.IW;
      float* out = col + row * g.B * P + b * P;
      for (int64_t i = 0; i < g.OH; ++i) {
        const int64_t ih = i * g.stride.h - g.padding.h + p * g.dilation.h;
        float* o = out + i * g.OW;
        if (ih < 0 || ih >= g.IH) {
          for (int64_t j = 0; j < g.OW; ++j) o[j] = 0.0f;
          continue;
        }
        const float* src = plane + ih * g.IW;
        for (int64_t j = 0; j < g.OW; ++j) {
          const int64_t iw = j * g.stride.w - g.padding.w + q * g.dilation.w;
          o[j] = iw >= 0 && iw < g.IW ? src[iw] : 0.0f;
        }
      }
    }
}

// The adjoint of im2col: dx[b, c, ih, iw] += every dcol entry that im2col copied from there.
// One thread per (b, c) plane, so no two threads write the same element.
void col2im(const ConvGeometry& g, const float* dcol, float* dx) {
  const int64_t P = g.OH * g.OW;
#pragma omp parallel for collapse(2) schedule(static) \
    if (g.C * g.KH * g.KW * g.B * P >= kParallelMinElements)
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t c = 0; c < g.C; ++c) {
      float* plane = dx + (b * g.C + c) * g.IH * g.IW;
      for (int64_t p = 0; p < g.KH; ++p)
        for (int64_t q = 0; q < g.KW; ++q) {
          const float* in = dcol + ((c * g.KH + p) * g.KW + q) * g.B * P + b * P;
          for (int64_t i = 0; i < g.OH; ++i) {
            const int64_t ih = i * g.stride.h - g.padding.h + p * g.dilation.h;
            if (ih < 0 || ih >= g.IH) continue;
            float* dst = plane + ih * g.IW;
            for (int64_t j = 0; j < g.OW; ++j) {
              const int64_t iw = j * g.stride.w - g.padding.w + q * g.dilation.w;
              if (iw >= 0 && iw < g.IW) dst[iw] += in[i * g.OW + j];
            }
          }
        }
    }
}

Tensor conv_forward(const std::string& op, const Tensor& x, const Tensor& W, const Tensor& b,
                    const ConvOptions& options, ConvCache* cache) {
  const ConvGeometry g = make_geometry(op, x.shape(), W.shape(), options);
  const int64_t P = g.OH * g.OW, BP = g.B * P, CKK = g.C * g.KH * g.KW;
  flops::add_sequential_steps(1);   // every output position at once
  Tensor col({CKK, BP});
  im2col(g, x.data(), col.data());
  Tensor Y({g.O, BP});   // output in [O, B, P] order
  blas::gemm(Trans::N, Trans::N, g.O, BP, CKK, 1.0f, W.data(), CKK, col.data(), BP, 0.0f,
             Y.data(), BP);
  Tensor y({g.B, g.O, g.OH, g.OW});
  const float* src = Y.data();
  const float* bias = b.defined() ? b.data() : nullptr;
  float* dst = y.data();
#pragma omp parallel for collapse(2) schedule(static) if (g.O * BP >= kParallelMinElements)
  for (int64_t n = 0; n < g.B; ++n)
    for (int64_t o = 0; o < g.O; ++o) {
      const float add = bias ? bias[o] : 0.0f;
      const float* s = src + o * BP + n * P;
      float* d = dst + (n * g.O + o) * P;
      for (int64_t p = 0; p < P; ++p) d[p] = s[p] + add;
    }
  if (cache) *cache = {x, g};
  return y;
}

Tensor conv_backward(const Tensor& dy, const Tensor& W, const ConvGeometry& g, const Tensor& x,
                     Tensor& dW, Tensor& db) {
  const int64_t P = g.OH * g.OW, BP = g.B * P, CKK = g.C * g.KH * g.KW;
  flops::add_sequential_steps(1);
  // dY: [O, B*P], the permutation of dy that matches the column matrix; db from the same pass.
  Tensor dY({g.O, BP});
  const float* src = dy.data();
  float* dst = dY.data();
  float* dbias = db.defined() ? db.data() : nullptr;
#pragma omp parallel for schedule(static) if (g.O * BP >= kParallelMinElements)
  for (int64_t o = 0; o < g.O; ++o) {
    float sum = 0.0f;
    for (int64_t n = 0; n < g.B; ++n) {
      const float* s = src + (n * g.O + o) * P;
      float* d = dst + o * BP + n * P;
      for (int64_t p = 0; p < P; ++p) {
        d[p] = s[p];
        sum += s[p];
      }
    }
    if (dbias) dbias[o] += sum;
  }
  Tensor col({CKK, BP});
  im2col(g, x.data(), col.data());
  blas::gemm(Trans::N, Trans::T, g.O, CKK, BP, 1.0f, dY.data(), BP, col.data(), BP, 1.0f,
             dW.data(), CKK);
  // dcol = W^T dY reuses the column buffer.
  blas::gemm(Trans::T, Trans::N, CKK, BP, g.O, 1.0f, W.data(), CKK, dY.data(), BP, 0.0f,
             col.data(), BP);
  Tensor dx({g.B, g.C, g.IH, g.IW});
  col2im(g, col.data(), dx.data());
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

// The 2-D options of a 1-D convolution seen as [B, C, 1, L].
ConvOptions as_2d(const ConvOptions& o) {
  return {Size2(1, o.stride.w), Size2(0, o.padding.w), Size2(1, o.dilation.w)};
}

}  // namespace

Tensor conv2d_forward(const Tensor& x, const Tensor& W, const Tensor& b, const ConvOptions& options,
                      ConvCache* cache) {
  check_tensor(x, {kAny, kAny, kAny, kAny}, "conv2d: x [B, C, IH, IW]");
  check_tensor(W, {kAny, x.dim(1), kAny, kAny}, "conv2d: W [O, C, KH, KW]");
  if (b.defined()) check_tensor(b, {W.dim(0)}, "conv2d: b [O]");
  return conv_forward("conv2d", x, W, b, options, cache);
}

Tensor conv2d_backward(const Tensor& dy, const Tensor& W, const ConvCache& cache, Tensor& dW,
                       Tensor& db) {
  const ConvGeometry& g = cache.geometry;
  check_tensor(dy, {g.B, g.O, g.OH, g.OW}, "conv2d_backward: dy [B, O, OH, OW]");
  check_tensor(W, {g.O, g.C, g.KH, g.KW}, "conv2d_backward: W [O, C, KH, KW]");
  check_tensor(dW, {g.O, g.C, g.KH, g.KW}, "conv2d_backward: dW [O, C, KH, KW]");
  if (db.defined()) check_tensor(db, {g.O}, "conv2d_backward: db [O]");
  return conv_backward(dy, W, g, cache.x, dW, db);
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

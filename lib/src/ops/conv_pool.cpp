// conv2d_max_pool2: the direct fused method for convolutions with few taps, else conv2d then
// max_pool2d (see conv_pool.hpp).
#include "attn/ops/conv_pool.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "attn/core/flops.hpp"
#include "conv_methods.hpp"
#include "pool_methods.hpp"
#include "vector_clones.hpp"

namespace attn::ops {
namespace {

using conv_detail::add_group_sums;
using conv_detail::kGradGroups;
using conv_detail::spread_over_threads;
using pool_detail::first_max4;

// Taps per output (C KH KW) up to which the direct method runs: an RGB image under a 3 x 3 kernel.
constexpr int64_t kDirectMaxTaps = 27;
// Pooling windows per step: one AVX2 vector of each of a window's four positions.
constexpr int64_t kWidth = 8;

bool direct_applies(const ConvGeometry& g, ConvAlgorithm algorithm) {
  return algorithm == ConvAlgorithm::kAuto && g.stride == Size2(1) && g.dilation == Size2(1) &&
         g.C * g.KH * g.KW <= kDirectMaxTaps && g.OW / 2 >= kWidth;
}

// The input under output rows [2 u0, 2 u1) of one image, zero-padded, its columns split by parity.
// Band column k holds input column k - pw, for k < 2 PW + KW - 1 (only the output columns [0, 2 PW)
// that pooling windows cover are computed). Per channel c and band row r (input row 2 u0 - ph + r)
// come two runs of H floats, the band's even columns, then its odd ones. Output column 2 m + e
// under tap (p, q) reads band column 2 m + e + q: run (e + q) % 2 at m + (e + q) / 2. So the
// outputs at the even and at the odd columns of kWidth consecutive windows each read kWidth
// consecutive floats, and a window's four outputs land in four vectors at the same lane.
struct Band {
  int64_t u0, u1, R, H;
  int64_t row() const { return 2 * H; }   // floats from one band row to the next
  int64_t floats(int64_t C) const { return C * R * row(); }
};
Band band_of(const ConvGeometry& g, int64_t PW, int64_t u0, int64_t u1) {
  return {u0, u1, 2 * (u1 - u0) + g.KH - 1, (2 * PW + g.KW) / 2};
}

void pad_band(const ConvGeometry& g, const Band& band, const float* x_n, float* padded) {
  const int64_t width = 2 * band.H;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t r = 0; r < band.R; ++r) {
      float* dst = padded + (c * band.R + r) * band.row();
      const int64_t ih = 2 * band.u0 - g.padding.h + r;
      const float* src = x_n + (c * g.IH + ih) * g.IW;
      for (int64_t k = 0; k < width; ++k) {
        const int64_t iw = k - g.padding.w;
        dst[(k % 2) * band.H + k / 2] = ih >= 0 && ih < g.IH && iw >= 0 && iw < g.IW ? src[iw] : 0.0f;
      }
    }
}

// offsets[e * taps + t]: where tap t = (c, p, q) (W's order) of an output at an even (e = 0) or odd
// (e = 1) column reads, from the band row of the output's row and the window's run index.
std::vector<int64_t> tap_offsets(const ConvGeometry& g, const Band& band) {
  const int64_t taps = g.C * g.KH * g.KW;
  std::vector<int64_t> offsets(static_cast<size_t>(2 * taps));
  for (int64_t e = 0; e < 2; ++e)
    for (int64_t c = 0, t = 0; c < g.C; ++c)
      for (int64_t p = 0; p < g.KH; ++p)
        for (int64_t q = 0; q < g.KW; ++q, ++t) {
          const int64_t column = e + q;   // of the band, from the window's first
          offsets[static_cast<size_t>(e * taps + t)] = (c * band.R + p) * band.row() + column % 2 * band.H + column / 2;
        }
  return offsets;
}

// What a block of windows needs: the weights w [kOut or 1, taps], the tap offsets, the band row of
// the pooled row's upper output row (top), the first window m, and the argmax of window m + k, in
// the convolution's output plane: base + 2 (m + k) + (0, 1, OW or OW + 1), base = 2 u OW.
struct Windows {
  const float* w;
  int64_t taps;
  const int64_t* offsets;
  const float* top;
  int64_t row, m;
  int32_t base, OW;
};

// kOut channels' pooled outputs at windows m .. m + kWidth - 1: y[o * ystride + m + k] and their
// argmax. The 4 kOut vectors of sums (a window's four positions, per channel) stay in registers.
template <int kOut>
[[gnu::always_inline]] inline void pooled_block(const Windows& b, const float* bias, float* y, int32_t* arg,
                                                int64_t ystride) {
  float a[kOut][4][kWidth];   // [o][2 r + e][k]: output row 2 u + r, column 2 (m + k) + e
  for (int o = 0; o < kOut; ++o)
    for (int i = 0; i < 4; ++i)
#pragma omp simd
      for (int64_t k = 0; k < kWidth; ++k) a[o][i][k] = bias[o];
  for (int64_t t = 0; t < b.taps; ++t) {
    const float* s0 = b.top + b.offsets[t] + b.m;
    const float* s1 = b.top + b.offsets[b.taps + t] + b.m;
    for (int o = 0; o < kOut; ++o) {
      const float v = b.w[o * b.taps + t];
#pragma omp simd
      for (int64_t k = 0; k < kWidth; ++k) {
        a[o][0][k] += v * s0[k];
        a[o][1][k] += v * s1[k];
        a[o][2][k] += v * s0[b.row + k];
        a[o][3][k] += v * s1[b.row + k];
      }
    }
  }
  for (int o = 0; o < kOut; ++o)
#pragma omp simd
    for (int64_t k = 0; k < kWidth; ++k) {
      float best;
      int32_t code;
      first_max4(a[o][0][k], a[o][1][k], a[o][2][k], a[o][3][k], b.OW, best, code);
      y[o * ystride + b.m + k] = best;
      arg[o * ystride + b.m + k] = b.base + static_cast<int32_t>(2 * (b.m + k)) + code;
    }
}

// One pooled row of kOut channels (windows [0, PW), PW >= kWidth; the last block moved back to
// end at PW, its first windows computed twice with the same values).
template <int kOut>
[[gnu::always_inline]] inline void pooled_row(Windows b, int64_t PW, const float* bias, float* y, int32_t* arg,
                                              int64_t ystride) {
  for (int64_t m0 = 0; m0 < PW; m0 += kWidth) {
    b.m = std::min(m0, PW - kWidth);
    pooled_block<kOut>(b, bias, y, arg, ystride);
  }
}

ATTN_VECTOR_CLONES
void pooled_row2(const Windows& b, int64_t PW, const float* bias, float* y, int32_t* arg, int64_t ystride) {
  pooled_row<2>(b, PW, bias, y, arg, ystride);
}

ATTN_VECTOR_CLONES
void pooled_row1(const Windows& b, int64_t PW, const float* bias, float* y, int32_t* arg, int64_t ystride) {
  pooled_row<1>(b, PW, bias, y, arg, ystride);
}

// The adjoint of one channel's pooled_block for the gradient dy of its windows, those from lane
// `from` on (earlier lanes belong to the block before): each window's gradient goes to its
// argmax position; acc [taps, kWidth] += the weight gradient's terms lane by lane, and with dtop
// (the band's gradient at top) the input's.
template <bool kInput>
[[gnu::always_inline]] inline void pooled_block_grad(const Windows& b, const float* dy, const int32_t* arg,
                                                     int64_t from, float* acc, float* dtop) {
  float d[4][kWidth];   // the gradient of the four positions, as a in pooled_block
#pragma omp simd
  for (int64_t k = 0; k < kWidth; ++k) {
    const float given = dy[b.m + k];   // read in every lane, kept from `from` on
    pool_detail::window_gradient(k >= from ? given : 0.0f, arg[b.m + k] - b.base - static_cast<int32_t>(2 * (b.m + k)),
                                 b.OW, d[0][k], d[1][k], d[2][k], d[3][k]);
  }
  for (int64_t t = 0; t < b.taps; ++t) {
    const int64_t o0 = b.offsets[t] + b.m, o1 = b.offsets[b.taps + t] + b.m;
    const float *s0 = b.top + o0, *s1 = b.top + o1;
    float* at = acc + t * kWidth;
#pragma omp simd
    for (int64_t k = 0; k < kWidth; ++k)
      at[k] += (d[0][k] * s0[k] + d[1][k] * s1[k]) + (d[2][k] * s0[b.row + k] + d[3][k] * s1[b.row + k]);
    if constexpr (kInput) {
      const float v = b.w[t];
      float *e0 = dtop + o0, *e1 = dtop + o1;   // runs of opposite parity: never the same floats
#pragma omp simd
      for (int64_t k = 0; k < kWidth; ++k) {
        e0[k] += v * d[0][k];
        e1[k] += v * d[1][k];
        e0[b.row + k] += v * d[2][k];
        e1[b.row + k] += v * d[3][k];
      }
    }
  }
}

template <bool kInput>
[[gnu::always_inline]] inline void pooled_row_grad(Windows b, int64_t PW, const float* dy, const int32_t* arg,
                                                   float* acc, float* dtop) {
  for (int64_t m0 = 0; m0 < PW; m0 += kWidth) {
    b.m = std::min(m0, PW - kWidth);
    pooled_block_grad<kInput>(b, dy, arg, m0 - b.m, acc, dtop);
  }
}

ATTN_VECTOR_CLONES
void pooled_row_grad_w(const Windows& b, int64_t PW, const float* dy, const int32_t* arg, float* acc) {
  pooled_row_grad<false>(b, PW, dy, arg, acc, nullptr);
}

ATTN_VECTOR_CLONES
void pooled_row_grad_wx(const Windows& b, int64_t PW, const float* dy, const int32_t* arg, float* acc,
                        float* dtop) {
  pooled_row_grad<true>(b, PW, dy, arg, acc, dtop);
}

// Pooled rows per task: enough tasks for every part even at B = 1 (bands are independent in
// forward, and each output's sum runs in the same order whichever band holds it).
int64_t band_rows(const ConvGeometry& g, int64_t PH) {
  const int64_t bands = std::clamp<int64_t>((2 * num_parts() + g.B - 1) / g.B, 1, PH);
  return (PH + bands - 1) / bands;
}

Tensor direct_forward(const ConvGeometry& g, const PoolGeometry& pg, const Tensor& x, const Tensor& W,
                      const Tensor& b, Tensor& argmax) {
  const int64_t PH = pg.OH, PW = pg.OW, taps = g.C * g.KH * g.KW, plane = PH * PW;
  const int64_t rows = band_rows(g, PH), bands = (PH + rows - 1) / rows, tasks = g.B * bands;
  Tensor y = Tensor::uninitialized({g.B, g.O, PH, PW});
  argmax = Tensor::uninitialized({g.B, g.O, PH, PW}, DType::i32);
  const Tensor bias = b.defined() ? b : Tensor({g.O});
  const float *xp = x.data(), *Wp = W.data(), *bp = bias.data();
  float* yp = y.data();
  int32_t* ap = argmax.idata();
  // Every band has the layout of a full one (the last may use fewer of its rows), so the taps'
  // offsets are the same for all.
  const Band full = band_of(g, PW, 0, rows);
  const std::vector<int64_t> offsets = tap_offsets(g, full);
#pragma omp parallel if (spread_over_threads(tasks))
  {
    Tensor padded = Tensor::uninitialized({full.floats(g.C)});
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t img = task / bands, u0 = task % bands * rows;
      Band band = full;
      band.u0 = u0, band.u1 = std::min(PH, u0 + rows);
      pad_band(g, band, xp + img * g.C * g.IH * g.IW, padded.data());
      for (int64_t u = band.u0; u < band.u1; ++u) {
        Windows win{Wp, taps, offsets.data(), padded.data() + 2 * (u - band.u0) * band.row(), band.row(), 0,
                    static_cast<int32_t>(2 * u * g.OW), static_cast<int32_t>(g.OW)};
        for (int64_t o = 0; o < g.O;) {
          const int64_t at = (img * g.O + o) * plane + u * PW;
          win.w = Wp + o * taps;
          if (g.O - o >= 2) pooled_row2(win, PW, bp + o, yp + at, ap + at, plane), o += 2;
          else pooled_row1(win, PW, bp + o, yp + at, ap + at, plane), o += 1;
        }
      }
    }
  }
  flops::add(g.B * g.O * 4 * plane * taps);
  flops::add_sequential_steps(1);
  return y;
}

// Per image (images in kGradGroups fixed groups, each group on one thread, so that dW's sums do
// not depend on the thread count): the whole image's band; per output channel, the weight
// gradient's terms summed lane by lane over its pooled rows and then across the lanes; dx through
// the band's gradient.
Tensor direct_backward(const ConvGeometry& g, const PoolGeometry& pg, const Tensor& x, const Tensor& W,
                       const Tensor& dy, const Tensor& argmax, Tensor& dW, Tensor& db, bool input_grad) {
  const int64_t PH = pg.OH, PW = pg.OW, taps = g.C * g.KH * g.KW, plane = PH * PW;
  const int64_t in_plane = g.C * g.IH * g.IW, groups = std::min(g.B, kGradGroups);
  const Band band = band_of(g, PW, 0, PH);
  const std::vector<int64_t> offsets = tap_offsets(g, band);
  Tensor dW_parts({groups, g.O * taps}), db_parts({groups, g.O});
  Tensor dx = input_grad ? Tensor::uninitialized({g.B, g.C, g.IH, g.IW}) : Tensor();
  const float *xp = x.data(), *Wp = W.data(), *dyp = dy.data();
  const int32_t* ap = argmax.idata();
  float *dWp = dW_parts.data(), *dbp = db_parts.data();
#pragma omp parallel if (spread_over_threads(groups))
  {
    Tensor padded = Tensor::uninitialized({band.floats(g.C)}), acc = Tensor::uninitialized({taps * kWidth});
    Tensor dband = input_grad ? Tensor::uninitialized({band.floats(g.C)}) : Tensor();
#pragma omp for schedule(dynamic)
    for (int64_t grp = 0; grp < groups; ++grp)
      for (int64_t img = grp * g.B / groups; img < (grp + 1) * g.B / groups; ++img) {
        pad_band(g, band, xp + img * in_plane, padded.data());
        if (input_grad) dband.zero();
        for (int64_t o = 0; o < g.O; ++o) {
          acc.zero();
          float sum = 0.0f;
          for (int64_t u = 0; u < PH; ++u) {
            const int64_t at = (img * g.O + o) * plane + u * PW;
            const Windows win{Wp + o * taps, taps, offsets.data(), padded.data() + 2 * u * band.row(), band.row(), 0,
                              static_cast<int32_t>(2 * u * g.OW), static_cast<int32_t>(g.OW)};
            if (input_grad)
              pooled_row_grad_wx(win, PW, dyp + at, ap + at, acc.data(), dband.data() + 2 * u * band.row());
            else
              pooled_row_grad_w(win, PW, dyp + at, ap + at, acc.data());
#pragma omp simd reduction(+ : sum)
            for (int64_t j = 0; j < PW; ++j) sum += dyp[at + j];
          }
          dbp[grp * g.O + o] += sum;
          for (int64_t t = 0; t < taps; ++t) {
            float s = 0.0f;
            for (int64_t k = 0; k < kWidth; ++k) s += acc.data()[t * kWidth + k];
            dWp[(grp * g.O + o) * taps + t] += s;
          }
        }
        if (!input_grad) continue;
        // dx[c, ih, iw] = the band's gradient at row ih + ph, column iw + pw (0 past the band:
        // inputs no computed output reads).
        for (int64_t c = 0; c < g.C; ++c)
          for (int64_t ih = 0; ih < g.IH; ++ih) {
            float* dst = dx.data() + img * in_plane + (c * g.IH + ih) * g.IW;
            const int64_t r = ih + g.padding.h;
            const float* src = dband.data() + (c * band.R + r) * band.row();
            for (int64_t iw = 0; iw < g.IW; ++iw) {
              const int64_t k = iw + g.padding.w;
              dst[iw] = r < band.R && k < 2 * band.H ? src[(k % 2) * band.H + k / 2] : 0.0f;
            }
          }
      }
  }
  add_group_sums(dW_parts, dW.data());
  if (db.defined()) add_group_sums(db_parts, db.data());
  flops::add((input_grad ? 2 : 1) * g.B * g.O * 4 * plane * taps);
  flops::add_sequential_steps(1);
  return dx;
}

}  // namespace

Tensor conv2d_max_pool2_forward(const Tensor& x, const Tensor& W, const Tensor& b, const ConvOptions& options,
                                ConvPoolCache* cache) {
  check_tensor(x, {kAny, kAny, kAny, kAny}, "conv2d_max_pool2: x [B, C, IH, IW]");
  check_tensor(W, {kAny, x.dim(1), kAny, kAny}, "conv2d_max_pool2: W [O, C, KH, KW]");
  if (b.defined()) check_tensor(b, {W.dim(0)}, "conv2d_max_pool2: b [O]");
  const ConvGeometry g = conv_detail::make_geometry("conv2d_max_pool2", x.shape(), W.shape(), options);
  const PoolGeometry pg =
      pool_detail::make_geometry("conv2d_max_pool2", {g.B, g.O, g.OH, g.OW}, {.kernel = 2}, false);
  if (!direct_applies(g, options.algorithm)) {
    ConvPoolCache c;
    const Tensor y = conv2d_forward(x, W, b, options, cache ? &c.conv : nullptr);
    const Tensor pooled = max_pool2d_forward(y, {.kernel = 2}, cache ? &c.pool : nullptr);
    if (cache) *cache = std::move(c);
    return pooled;
  }
  Tensor argmax;
  Tensor y = direct_forward(g, pg, x, W, b, argmax);
  if (cache) *cache = {{x, g}, {pg, argmax}, /*direct=*/true};
  return y;
}

Tensor conv2d_max_pool2_backward(const Tensor& dy, const Tensor& W, const ConvPoolCache& cache, Tensor& dW,
                                 Tensor& db, bool input_grad) {
  const PoolGeometry& pg = cache.pool.geometry;
  check_tensor(dy, {pg.B, pg.C, pg.OH, pg.OW}, "conv2d_max_pool2_backward: dy [B, O, OH / 2, OW / 2]");
  if (!cache.direct) return conv2d_backward(max_pool2d_backward(dy, cache.pool), W, cache.conv, dW, db, input_grad);
  const ConvGeometry& g = cache.conv.geometry;
  check_tensor(W, {g.O, g.C, g.KH, g.KW}, "conv2d_max_pool2_backward: W [O, C, KH, KW]");
  check_tensor(dW, {g.O, g.C, g.KH, g.KW}, "conv2d_max_pool2_backward: dW [O, C, KH, KW]");
  if (db.defined()) check_tensor(db, {g.O}, "conv2d_max_pool2_backward: db [O]");
  return direct_backward(g, pg, cache.conv.x, W, dy, cache.pool.argmax, dW, db, input_grad);
}

}  // namespace attn::ops

// Winograd's minimal filtering F(2 x 2, 3 x 3) for 3 x 3 convolutions at stride 1 (Lavin & Gray
// 2016, "Fast Algorithms for Convolutional Neural Networks"). Each 2 x 2 output tile is
//   Y = A^T [(G g G^T) ⊙ (B^T d B)] A
// for the 4 x 4 input tile d under it (tiles overlap by 2) and each 3 x 3 kernel g, with
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1].
// Summed over input channels, the 16 elementwise products ξ of every tile become 16 GEMMs
// M[ξ] = U[ξ] V[ξ]: [O, C] x [C, tiles]. That is 16 multiply-adds per tile, input and output
// channel where im2col's product does 36 (2.25 times fewer); the transforms are additions and
// halvings (the halvings exact in float), passes over a chunk of tiles that the GEMMs then read
// from cache.
//
// Backward is the adjoint of the same algorithm: dU[ξ] = Σ_tiles dM[ξ] V[ξ]^T with dM = A dY A^T,
// then dW = G^T dU G (linear, so summed over the batch first and transformed once); dx is the
// forward convolution of dy with every kernel turned by 180° and the channel axes swapped, at
// padding 2 - padding.
#include <algorithm>

#include "attn/blas/blas.hpp"
#include "attn/core/flops.hpp"
#include "conv_methods.hpp"
#include "vector_clones.hpp"

namespace attn::ops::conv_detail {
namespace {

using blas::Trans;

constexpr int64_t kXi = 16;   // the 4 x 4 positions ξ of the transformed domain
// About this many floats of transformed input and products per chunk (1 MiB, an L2 cache)...
constexpr int64_t kChunkFloats = int64_t{1} << 18;
// ...but at least this many tiles, so that the 16 products stay wide.
constexpr int64_t kMinTiles = 128;

// The floats from one ξ's matrix to the next in V and M: the matrix and one cache line more.
// Matrices of whole multiples of 4 KiB (C T = 5,120 floats, say) would put the 16 streams a
// transform writes or reads in the same L1 set, more than its ways, and every access would miss.
int64_t xi_stride(int64_t matrix_floats) { return matrix_floats + 16; }

// An image's tiles and how its tile rows are cut into chunks (one task each).
struct Tiles {
  int64_t TH = 0, TW = 0;   // tile rows, tile columns: ceil(OH / 2), ceil(OW / 2)
  int64_t rows = 0;         // tile rows per chunk; the last chunk may have fewer
  int64_t chunks = 0;       // chunks per image
};

Tiles tiles_of(const ConvGeometry& g) {
  Tiles t;
  t.TH = (g.OH + 1) / 2, t.TW = (g.OW + 1) / 2;
  const int64_t per_row = kXi * (g.C + g.O) * t.TW;
  const int64_t want = std::clamp(std::max(kChunkFloats / per_row, (kMinTiles + t.TW - 1) / t.TW),
                                  int64_t{1}, t.TH);
  t.chunks = (t.TH + want - 1) / want;
  t.rows = (t.TH + t.chunks - 1) / t.chunks;   // equal chunks
  return t;
}

// U[ξ, o, c] = (G g G^T)[ξ] for g = W[o, c]:   W [O, C, 3, 3] -> U [16, O, C].
Tensor transform_filters(const float* W, int64_t O, int64_t C) {
  Tensor U = Tensor::uninitialized({kXi, O, C});
  float* u = U.data();
  const int64_t OC = O * C;
  for (int64_t k = 0; k < OC; ++k) {
    const float* g = W + k * 9;
    float t[4][3];   // G g
    for (int q = 0; q < 3; ++q) {
      t[0][q] = g[q];
      t[1][q] = 0.5f * (g[q] + g[3 + q] + g[6 + q]);
      t[2][q] = 0.5f * (g[q] - g[3 + q] + g[6 + q]);
      t[3][q] = g[6 + q];
    }
    for (int a = 0; a < 4; ++a) {   // (G g) G^T
      u[(a * 4 + 0) * OC + k] = t[a][0];
      u[(a * 4 + 1) * OC + k] = 0.5f * (t[a][0] + t[a][1] + t[a][2]);
      u[(a * 4 + 2) * OC + k] = 0.5f * (t[a][0] - t[a][1] + t[a][2]);
      u[(a * 4 + 3) * OC + k] = t[a][2];
    }
  }
  return U;
}

// The adjoint of transform_filters: dW[o, c] += G^T dU[:, o, c] G.   dU [16, O, C].
void add_filter_gradient(const float* dU, int64_t O, int64_t C, float* dW) {
  const int64_t OC = O * C;
  for (int64_t k = 0; k < OC; ++k) {
    float t[3][4];   // G^T dU
    for (int b = 0; b < 4; ++b) {
      const float x0 = dU[b * OC + k], x1 = dU[(4 + b) * OC + k];
      const float x2 = dU[(8 + b) * OC + k], x3 = dU[(12 + b) * OC + k];
      t[0][b] = x0 + 0.5f * (x1 + x2);
      t[1][b] = 0.5f * (x1 - x2);
      t[2][b] = 0.5f * (x1 + x2) + x3;
    }
    float* g = dW + k * 9;
    for (int p = 0; p < 3; ++p) {   // (G^T dU) G
      g[p * 3 + 0] += t[p][0] + 0.5f * (t[p][1] + t[p][2]);
      g[p * 3 + 1] += 0.5f * (t[p][1] - t[p][2]);
      g[p * 3 + 2] += 0.5f * (t[p][1] + t[p][2]) + t[p][3];
    }
  }
}

// tile(j) for j in [lo, hi), in blocks of 8 (a vector of the AVX2 clone) so that a row of
// tiles has no scalar remainder: the last block is moved back to end at hi, so a few tiles are
// computed twice and written twice with the same values. Under 8 tiles, one at a time.
template <class Tile>
[[gnu::always_inline]] inline void for_tiles(int64_t lo, int64_t hi, Tile tile) {
  constexpr int64_t kBlock = 8;
  if (hi - lo < kBlock) {
    for (int64_t j = lo; j < hi; ++j) tile(j);
    return;
  }
  for (int64_t j0 = lo; j0 < hi; j0 += kBlock) {
    const int64_t jb = std::min(j0, hi - kBlock);
#pragma omp simd
    for (int64_t k = 0; k < kBlock; ++k) tile(jb + k);
  }
}

// V[ξ] of tile j, (B^T d B)[ξ], into v[ξ * s + j]: d[r][q] = rows[r * width + 2 j + q].
[[gnu::always_inline]] inline void input_tile(const float* rows, int64_t width, float* v, int64_t s, int64_t j) {
  float t[4][4];   // B^T d
  for (int q = 0; q < 4; ++q) {
    const float* col = rows + 2 * j + q;
    const float d0 = col[0], d1 = col[width], d2 = col[2 * width], d3 = col[3 * width];
    t[0][q] = d0 - d2;
    t[1][q] = d1 + d2;
    t[2][q] = d2 - d1;
    t[3][q] = d1 - d3;
  }
  for (int a = 0; a < 4; ++a) {   // (B^T d) B
    v[(a * 4 + 0) * s + j] = t[a][0] - t[a][2];
    v[(a * 4 + 1) * s + j] = t[a][1] + t[a][2];
    v[(a * 4 + 2) * s + j] = t[a][2] - t[a][1];
    v[(a * 4 + 3) * s + j] = t[a][1] - t[a][3];
  }
}

// V[ξ] of tile rows [r0, r1) of one input channel (plane [IH, IW]) into v[ξ * xi_stride + t],
// t = (ti - r0) TW + j. The rows under those tiles are first copied with their zero padding
// into `padded` (2 (r1 - r0) + 2 rows of 2 TW + 2 floats), so that every tile reads its 4 x 4
// inputs at the same offsets and the whole row of tiles is one vector loop.
ATTN_VECTOR_CLONES
void transform_input_plane(const ConvGeometry& g, const float* plane, int64_t r0, int64_t r1, int64_t TW,
                           float* padded, float* v, int64_t xi_stride) {
  const int64_t width = 2 * TW + 2, pw = g.padding.w;   // width >= pw + IW: 2 TW + 2 >= OW + 2 = IW + 2 pw
  for (int64_t r = 0; r < 2 * (r1 - r0) + 2; ++r) {
    float* dst = padded + r * width;
    const int64_t ih = 2 * r0 - g.padding.h + r;
    if (ih < 0 || ih >= g.IH) {
      std::fill(dst, dst + width, 0.0f);
      continue;
    }
    const float* src = plane + ih * g.IW;
    for (int64_t k = 0; k < pw; ++k) dst[k] = 0.0f;
#pragma omp simd
    for (int64_t k = 0; k < g.IW; ++k) dst[pw + k] = src[k];
    for (int64_t k = pw + g.IW; k < width; ++k) dst[k] = 0.0f;
  }
  for (int64_t ti = 0; ti < r1 - r0; ++ti) {
    const float* d = padded + 2 * ti * width;
    float* vt = v + ti * TW;
    for_tiles(0, TW, [&](int64_t j) __attribute__((always_inline)) { input_tile(d, width, vt, xi_stride, j); });
  }
}

// One output tile, A^T m A + bias, from m[ξ * s + j].
struct OutTile {
  float y00, y01, y10, y11;
};
[[gnu::always_inline]] inline OutTile output_tile(const float* m, int64_t s, int64_t j, float bias) {
  float r0[4], r1[4];   // A^T m
  for (int b = 0; b < 4; ++b) {
    const float m0 = m[b * s + j], m1 = m[(4 + b) * s + j], m2 = m[(8 + b) * s + j], m3 = m[(12 + b) * s + j];
    r0[b] = m0 + m1 + m2;
    r1[b] = m1 - m2 - m3;
  }
  return {r0[0] + r0[1] + r0[2] + bias, r0[1] - r0[2] - r0[3] + bias,
          r1[0] + r1[1] + r1[2] + bias, r1[1] - r1[2] - r1[3] + bias};
}

// Output rows y0 = 2 ti and y1 = 2 ti + 1 of one channel from its products m (ξ stride
// xi_stride); y1 is a scratch row below an odd height. An odd width's last tile writes one column.
ATTN_VECTOR_CLONES
void transform_output_row(const float* m, int64_t xi_stride, int64_t OW, float bias, float* y0, float* y1) {
  const int64_t full = OW / 2;
  for_tiles(0, full, [&](int64_t j) __attribute__((always_inline)) {
    const OutTile t = output_tile(m, xi_stride, j, bias);
    y0[2 * j] = t.y00, y0[2 * j + 1] = t.y01;
    y1[2 * j] = t.y10, y1[2 * j + 1] = t.y11;
  });
  if (OW % 2) {
    const OutTile t = output_tile(m, xi_stride, full, bias);
    y0[2 * full] = t.y00, y1[2 * full] = t.y10;
  }
}

// The adjoint of output_tile: dm[ξ * s + j] = (A dY A^T)[ξ] for the tile's dy values.
[[gnu::always_inline]] inline void output_tile_grad(float a00, float a01, float a10, float a11, float* dm,
                                                    int64_t s, int64_t j) {
  const float r[4][2] = {{a00, a01}, {a00 + a10, a01 + a11}, {a00 - a10, a01 - a11}, {-a10, -a11}};   // A dY
  for (int a = 0; a < 4; ++a) {   // (A dY) A^T
    dm[(a * 4 + 0) * s + j] = r[a][0];
    dm[(a * 4 + 1) * s + j] = r[a][0] + r[a][1];
    dm[(a * 4 + 2) * s + j] = r[a][0] - r[a][1];
    dm[(a * 4 + 3) * s + j] = -r[a][1];
  }
}

// dM of one tile row of one channel from dy rows 2 ti (dy0) and 2 ti + 1 (dy1, a zero row below
// an odd height); past an odd width dy counts as 0.
ATTN_VECTOR_CLONES
void transform_output_grad_row(const float* dy0, const float* dy1, int64_t OW, float* dm, int64_t xi_stride) {
  const int64_t full = OW / 2;
  for_tiles(0, full, [&](int64_t j) __attribute__((always_inline)) {
    output_tile_grad(dy0[2 * j], dy0[2 * j + 1], dy1[2 * j], dy1[2 * j + 1], dm, xi_stride, j);
  });
  if (OW % 2) output_tile_grad(dy0[2 * full], 0.0f, dy1[2 * full], 0.0f, dm, xi_stride, full);
}

// V [16, C, T] of tile rows [r0, r1) of image x_n (T = (r1 - r0) TW tiles); `padded` holds
// padded_floats(t) floats.
void transform_input(const ConvGeometry& g, const Tiles& t, const float* x_n, int64_t r0, int64_t r1,
                     float* padded, float* V) {
  const int64_t T = (r1 - r0) * t.TW;
  for (int64_t c = 0; c < g.C; ++c)
    transform_input_plane(g, x_n + c * g.IH * g.IW, r0, r1, t.TW, padded, V + c * T, xi_stride(g.C * T));
}

int64_t padded_floats(const Tiles& t) { return (2 * t.rows + 2) * (2 * t.TW + 2); }

// The chunk a task covers: image n, tile rows [r0, r1).
struct Chunk {
  int64_t n, r0, r1;
};
Chunk chunk_of(const Tiles& t, int64_t task) {
  const int64_t r0 = task % t.chunks * t.rows;
  return {task / t.chunks, r0, std::min(t.TH, r0 + t.rows)};
}

// The forward's work (also dx's, in backward), without the sequential-step count.
Tensor forward_tiles(const ConvGeometry& g, const Tensor& x, const Tensor& W, const Tensor& bias) {
  const Tiles t = tiles_of(g);
  const Tensor U = transform_filters(W.data(), g.O, g.C);
  Tensor y = Tensor::uninitialized({g.B, g.O, g.OH, g.OW});
  const float *xp = x.data(), *Up = U.data(), *bp = bias.defined() ? bias.data() : nullptr;
  float* yp = y.data();
  const int64_t tasks = g.B * t.chunks, most = t.rows * t.TW;
#pragma omp parallel if (spread_over_threads(tasks))
  {
    Tensor V = Tensor::uninitialized({kXi * xi_stride(g.C * most)});
    Tensor M = Tensor::uninitialized({kXi * xi_stride(g.O * most)});
    Tensor padded = Tensor::uninitialized({padded_floats(t)}), spare = Tensor::uninitialized({g.OW});
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const Chunk k = chunk_of(t, task);
      const int64_t T = (k.r1 - k.r0) * t.TW;
      transform_input(g, t, xp + k.n * g.C * g.IH * g.IW, k.r0, k.r1, padded.data(), V.data());
      blas::gemm_strided_batched(Trans::N, Trans::N, g.O, T, g.C, 1.0f, Up, g.C, g.O * g.C, V.data(), T,
                                 xi_stride(g.C * T), 0.0f, M.data(), T, xi_stride(g.O * T), kXi);
      for (int64_t o = 0; o < g.O; ++o)
        for (int64_t ti = k.r0; ti < k.r1; ++ti) {
          float* y0 = yp + ((k.n * g.O + o) * g.OH + 2 * ti) * g.OW;
          transform_output_row(M.data() + o * T + (ti - k.r0) * t.TW, xi_stride(g.O * T), g.OW,
                               bp ? bp[o] : 0.0f, y0, 2 * ti + 1 < g.OH ? y0 + g.OW : spare.data());
        }
    }
  }
  return y;
}

}  // namespace

bool winograd_applies(const ConvGeometry& g) {
  return g.KH == 3 && g.KW == 3 && g.stride == Size2(1) && g.dilation == Size2(1) && g.padding.h <= 2 &&
         g.padding.w <= 2;
}

Tensor winograd_forward(const ConvGeometry& g, const Tensor& x, const Tensor& W, const Tensor& bias) {
  flops::add_sequential_steps(1);   // every output position at once
  return forward_tiles(g, x, W, bias);
}

// Per image n (images in kGradGroups fixed groups, each group on one thread) and chunk: V of x_n,
// dM of dy_n, dU_group += dM V^T (16 products); db_group from dy_n's planes. The group sums are
// added in order, then dW += G^T dU G. dx is a forward convolution of dy (see the top).
Tensor winograd_backward(const ConvGeometry& g, const Tensor& x, const Tensor& W, const Tensor& dy,
                         Tensor& dW, Tensor& db, bool input_grad) {
  const Tiles t = tiles_of(g);
  flops::add_sequential_steps(1);
  const int64_t groups = std::min(g.B, kGradGroups), OC = g.O * g.C, most = t.rows * t.TW;
  const int64_t P = g.OH * g.OW;
  Tensor dU_parts({groups, kXi * OC}), db_parts({groups, g.O});
  const float *xp = x.data(), *dyp = dy.data();
  float *dUp = dU_parts.data(), *dbp = db_parts.data();
#pragma omp parallel if (spread_over_threads(groups))
  {
    Tensor V = Tensor::uninitialized({kXi * xi_stride(g.C * most)});
    Tensor dM = Tensor::uninitialized({kXi * xi_stride(g.O * most)});
    Tensor padded = Tensor::uninitialized({padded_floats(t)}), zeros({g.OW});
#pragma omp for schedule(dynamic)
    for (int64_t grp = 0; grp < groups; ++grp) {
      float* dUg = dUp + grp * kXi * OC;
      float* dbg = dbp + grp * g.O;
      for (int64_t n = grp * g.B / groups; n < (grp + 1) * g.B / groups; ++n) {
        const float* dyn = dyp + n * g.O * P;
        for (int64_t o = 0; o < g.O; ++o) {
          float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
          for (int64_t e = 0; e < P; ++e) sum += dyn[o * P + e];
          dbg[o] += sum;
        }
        for (int64_t r0 = 0; r0 < t.TH; r0 += t.rows) {
          const int64_t r1 = std::min(t.TH, r0 + t.rows), T = (r1 - r0) * t.TW;
          transform_input(g, t, xp + n * g.C * g.IH * g.IW, r0, r1, padded.data(), V.data());
          for (int64_t o = 0; o < g.O; ++o)
            for (int64_t ti = r0; ti < r1; ++ti) {
              const float* dy0 = dyn + (o * g.OH + 2 * ti) * g.OW;
              transform_output_grad_row(dy0, 2 * ti + 1 < g.OH ? dy0 + g.OW : zeros.data(), g.OW,
                                        dM.data() + o * T + (ti - r0) * t.TW, xi_stride(g.O * T));
            }
          blas::gemm_strided_batched(Trans::N, Trans::T, g.O, g.C, T, 1.0f, dM.data(), T, xi_stride(g.O * T),
                                     V.data(), T, xi_stride(g.C * T), 1.0f, dUg, g.C, OC, kXi);
        }
      }
    }
  }
  Tensor dU = Tensor::zeros({kXi * OC});
  add_group_sums(dU_parts, dU.data());
  add_filter_gradient(dU.data(), g.O, g.C, dW.data());
  if (db.defined()) add_group_sums(db_parts, db.data());
  if (!input_grad) return Tensor();

  // dx[c, i, j] = Σ_{o, p, q} W[o, c, p, q] dy[o, i + ph - p, j + pw - q]: the convolution of dy
  // with Wf[c, o, p, q] = W[o, c, 2 - p, 2 - q] at padding 2 - padding.
  Tensor Wf = Tensor::uninitialized({g.C, g.O, 3, 3});
  const float* Wp = W.data();
  float* Wfp = Wf.data();
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t e = 0; e < 9; ++e) Wfp[(c * g.O + o) * 9 + e] = Wp[(o * g.C + c) * 9 + 8 - e];
  ConvGeometry gd = g;
  gd.C = g.O, gd.IH = g.OH, gd.IW = g.OW, gd.O = g.C, gd.OH = g.IH, gd.OW = g.IW;
  gd.padding = Size2(2 - g.padding.h, 2 - g.padding.w);
  return forward_tiles(gd, dy, Wf, Tensor());
}

}  // namespace attn::ops::conv_detail

// NTM addressing: cosine similarity, circular convolution and sharpening, forward and backward.
#include "attn/ops/addressing.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attn/core/flops.hpp"

namespace attn::ops {
namespace {

// (i + offset) mod N for any sign of i + offset.
inline int64_t wrap(int64_t i, int64_t N) {
  const int64_t r = i % N;
  return r < 0 ? r + N : r;
}

std::string index_string(int64_t b, int64_t i) { return "[" + std::to_string(b) + ", " + std::to_string(i) + "]"; }

}  // namespace

Tensor cosine_similarity_forward(const Tensor& k, const Tensor& mem, CosineSimilarityCache* cache,
                                 float eps) {
  check_tensor(mem, {kAny, kAny, kAny}, "cosine_similarity: mem [B, N, M]");
  const int64_t B = mem.dim(0), N = mem.dim(1), M = mem.dim(2);
  check_tensor(k, {B, M}, "cosine_similarity: k [B, M]");
  if (!(eps > 0.0f)) throw ConfigError("cosine_similarity: eps must be > 0, got " + std::to_string(eps));

  Tensor sim({B, N}), k_norm({B}), mem_norm({B, N});
  for (int64_t b = 0; b < B; ++b) {
    const float* kb = k.data() + b * M;
    double kk = 0;
    for (int64_t m = 0; m < M; ++m) kk += static_cast<double>(kb[m]) * kb[m];
    const double a = std::sqrt(kk);
    k_norm.at(b) = static_cast<float>(a);
    for (int64_t i = 0; i < N; ++i) {
      const float* row = mem.data() + (b * N + i) * M;
      double dot = 0, rr = 0;
      for (int64_t m = 0; m < M; ++m) {
        dot += static_cast<double>(kb[m]) * row[m];
        rr += static_cast<double>(row[m]) * row[m];
      }
      const double c = std::sqrt(rr);
      mem_norm.at(b * N + i) = static_cast<float>(c);
      sim.at(b * N + i) = static_cast<float>(dot / (a * c + eps));
    }
  }
  flops::add(B * M + 2 * B * N * M);
  if (cache) *cache = {k, mem, sim, k_norm, mem_norm, eps};
  return sim;
}

CosineSimilarityGrads cosine_similarity_backward(const Tensor& dK,
                                                 const CosineSimilarityCache& cache) {
  const int64_t B = cache.mem.dim(0), N = cache.mem.dim(1), M = cache.mem.dim(2);
  check_tensor(dK, {B, N}, "cosine_similarity_backward: dK [B, N]");

  // With D = a c + eps (a = ||k||, c = ||mem_i||):
  //   dK/dk     = mem_i / D - (K c / D) k / a       dK/dmem_i = k / D - (K a / D) mem_i / c
  // where u / |u| is taken as 0 for u = 0 (there the dot product, hence K, is 0 as well).
  CosineSimilarityGrads g{Tensor({B, M}), Tensor({B, N, M})};
  for (int64_t b = 0; b < B; ++b) {
    const float* kb = cache.k.data() + b * M;
    const float a = cache.k_norm.at(b);
    float* dk = g.dk.data() + b * M;
    double k_coef = 0;   // Σ_i dK_i K_i c_i / D_i, the factor of -k / a
    for (int64_t i = 0; i < N; ++i) {
      const int64_t bi = b * N + i;
      const float c = cache.mem_norm.at(bi), K = cache.sim.at(bi);
      const float D = a * c + cache.eps, d = dK.at(bi);
      const float* row = cache.mem.data() + bi * M;
      float* drow = g.dmem.data() + bi * M;
      const float to_k = d / D;                                 // coefficient of k in dmem_i
      const float to_row = c > 0.0f ? -d * K * a / (D * c) : 0.0f;   // ...and of mem_i
      for (int64_t m = 0; m < M; ++m) {
        dk[m] += to_k * row[m];
        drow[m] = to_k * kb[m] + to_row * row[m];
      }
      k_coef += static_cast<double>(d) * K * c / D;
    }
    if (a > 0.0f) {
      const float s = static_cast<float>(-k_coef / a);
      for (int64_t m = 0; m < M; ++m) dk[m] += s * kb[m];
    }
  }
  flops::add(B * M + 3 * B * N * M);
  return g;
}

Tensor circular_conv_forward(const Tensor& w, const Tensor& s, CircularConvCache* cache) {
  check_tensor(w, {kAny, kAny}, "circular_conv: w [B, N]");
  const int64_t B = w.dim(0), N = w.dim(1);
  check_tensor(s, {B, kAny}, "circular_conv: s [B, S]");
  const int64_t S = s.dim(1);
  if (S % 2 == 0)
    throw ShapeError("circular_conv: s [B, S] has " + std::to_string(S) +
                     " shifts, expected an odd number (shifts -(S-1)/2 ... (S-1)/2)");
  if (N == 0) throw ShapeError("circular_conv: w [B, N] has no memory rows (N = 0)");

  // Shift j (stored at index jj = j + half) moves weight from row i - j to row i.
  const int64_t half = (S - 1) / 2;
  Tensor y({B, N});
  for (int64_t b = 0; b < B; ++b) {
    const float* wb = w.data() + b * N;
    const float* sb = s.data() + b * S;
    float* yb = y.data() + b * N;
    for (int64_t i = 0; i < N; ++i) {
      float acc = 0.0f;
      for (int64_t jj = 0; jj < S; ++jj) acc += wb[wrap(i - jj + half, N)] * sb[jj];
      yb[i] = acc;
    }
  }
  flops::add(B * N * S);
  if (cache) *cache = {w, s};
  return y;
}

CircularConvGrads circular_conv_backward(const Tensor& dy, const CircularConvCache& cache) {
  const int64_t B = cache.w.dim(0), N = cache.w.dim(1), S = cache.s.dim(1);
  check_tensor(dy, {B, N}, "circular_conv_backward: dy [B, N]");
  const int64_t half = (S - 1) / 2;
  CircularConvGrads g{Tensor({B, N}), Tensor({B, S})};
  for (int64_t b = 0; b < B; ++b) {
    const float* wb = cache.w.data() + b * N;
    const float* sb = cache.s.data() + b * S;
    const float* dyb = dy.data() + b * N;
    float* dw = g.dw.data() + b * N;
    float* ds = g.ds.data() + b * S;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t jj = 0; jj < S; ++jj) {
        const int64_t src = wrap(i - jj + half, N);
        dw[src] += dyb[i] * sb[jj];
        ds[jj] += dyb[i] * wb[src];
      }
  }
  flops::add(2 * B * N * S);
  return g;
}

Tensor sharpen_forward(const Tensor& w, const Tensor& gamma, SharpenCache* cache) {
  check_tensor(w, {kAny, kAny}, "sharpen: w [B, N]");
  const int64_t B = w.dim(0), N = w.dim(1);
  check_tensor(gamma, {B}, "sharpen: gamma [B]");

  Tensor y({B, N}), w_max({B}), total({B});
  for (int64_t b = 0; b < B; ++b) {
    const float g = gamma.at(b);
    if (!(g >= 1.0f && std::isfinite(g)))
      throw DataError("sharpen: gamma[" + std::to_string(b) + "] = " + std::to_string(g) +
                      ", expected a finite value >= 1 (Graves et al. 2014, eq. 9)");
    const float* wb = w.data() + b * N;
    float mx = 0.0f;
    for (int64_t i = 0; i < N; ++i) {
      if (!(wb[i] >= 0.0f && std::isfinite(wb[i])))
        throw DataError("sharpen: w" + index_string(b, i) + " = " + std::to_string(wb[i]) +
                        ", expected a finite weight >= 0");
      mx = std::max(mx, wb[i]);
    }
    if (mx == 0.0f)
      throw DataError("sharpen: row " + std::to_string(b) + " of w is all zero, so w^γ cannot be normalised");
    float* yb = y.data() + b * N;
    double sum = 0;
    for (int64_t i = 0; i < N; ++i) {
      yb[i] = std::pow(wb[i] / mx, g);   // in [0, 1], exactly 1 at the maximum
      sum += yb[i];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < N; ++i) yb[i] *= inv;
    w_max.at(b) = mx;
    total.at(b) = static_cast<float>(sum);
  }
  flops::add(B * N);
  if (cache) *cache = {w, gamma, y, w_max, total};
  return y;
}

SharpenGrads sharpen_backward(const Tensor& dy, const SharpenCache& cache) {
  const int64_t B = cache.w.dim(0), N = cache.w.dim(1);
  check_tensor(dy, {B, N}, "sharpen_backward: dy [B, N]");
  SharpenGrads g{Tensor({B, N}), Tensor({B})};
  for (int64_t b = 0; b < B; ++b) {
    const float* wb = cache.w.data() + b * N;
    const float* yb = cache.y.data() + b * N;
    const float* dyb = dy.data() + b * N;
    const float gam = cache.gamma.at(b), mx = cache.w_max.at(b);
    // r = <dy, y>;  with l_i = ln(w_i / max w) (shift-invariant since Σ y = 1):
    // dγ = Σ dy_i y_i l_i - r Σ y_i l_i.
    double r = 0, dy_y_l = 0, y_l = 0;
    for (int64_t i = 0; i < N; ++i) {
      r += static_cast<double>(dyb[i]) * yb[i];
      if (yb[i] > 0.0f) {
        const double l = std::log(static_cast<double>(wb[i]) / mx);
        dy_y_l += static_cast<double>(dyb[i]) * yb[i] * l;
        y_l += yb[i] * l;
      }
    }
    g.dgamma.at(b) = static_cast<float>(dy_y_l - r * y_l);
    // w^(γ-1) / Σ w^γ = (w / max)^(γ-1) / (max * total); pow(0, 0) = 1 covers γ = 1 at w = 0.
    const double scale = gam / (static_cast<double>(mx) * cache.total.at(b));
    float* dw = g.dw.data() + b * N;
    for (int64_t i = 0; i < N; ++i)
      dw[i] = static_cast<float>(scale * (dyb[i] - r) * std::pow(wb[i] / mx, gam - 1.0f));
  }
  flops::add(3 * B * N);
  return g;
}

}  // namespace attn::ops

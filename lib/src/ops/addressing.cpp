// NTM addressing: cosine similarity, circular convolution and sharpening, forward and backward,
// and the whole chain fused for one head.
#include "attn/ops/addressing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "attn/core/flops.hpp"
#include "attn/ops/softmax.hpp"
#include "vector_clones.hpp"

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

// ---- the fused head ----------------------------------------------------------------------------

void memory_row_norms(const float* mem, int64_t N, int64_t M, float* norms) {
  for (int64_t i = 0; i < N; ++i) {
    const float* row = mem + i * M;
    float rr = 0.0f;
#pragma omp simd reduction(+ : rr)
    for (int64_t m = 0; m < M; ++m) rr += row[m] * row[m];
    norms[i] = std::sqrt(rr);
  }
}

namespace {

// The shift j = jj - (Ns-1)/2 as a rotation in [0, Nm): w~[i] takes w_g[(i - rot) mod Nm]
// (the arguments S = Ns shifts, N = Nm memory rows).
inline int64_t rotation(int64_t jj, int64_t S, int64_t N) { return wrap(jj - (S - 1) / 2, N); }

}  // namespace

ATTN_VECTOR_CLONES
void head_address_row_forward(const HeadAddressDims& d, const HeadAddressRow& in, float* w, float* saved) {
  const int64_t N = d.N, M = d.M, S = d.S;
  float* K = saved;
  float* wc = saved + N;
  float* wg = saved + 2 * N;
  float* l = saved + 3 * N;
  const float* k = in.k;
  const float beta = in.beta, g = in.g, gamma = in.gamma;

  // K_i = k . mem_i / (||k|| ||mem_i|| + eps)   (eq. 6)
  float kk = 0.0f;
#pragma omp simd reduction(+ : kk)
  for (int64_t m = 0; m < M; ++m) kk += k[m] * k[m];
  const float a = std::sqrt(kk);
  float zmax = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < N; ++i) {
    const float* row = in.mem + i * M;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t m = 0; m < M; ++m) dot += k[m] * row[m];
    K[i] = dot / (a * in.mem_norm[i] + kCosineEps);
    zmax = std::max(zmax, beta * K[i]);
  }
  // w_c = softmax(β K)   (eq. 5)
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < N; ++i) {
    wc[i] = exp_approx(beta * K[i] - zmax);
    sum += wc[i];
  }
  const float inv = 1.0f / sum;
  // w_g = g w_c + (1 - g) w_prev   (eq. 7)
  for (int64_t i = 0; i < N; ++i) {
    wc[i] *= inv;
    wg[i] = g * wc[i] + (1.0f - g) * in.w_prev[i];
  }
  // w~[i] = Σ_j w_g[i - j] s_j   (eq. 8): each shift is a rotation, two contiguous runs
  std::fill(w, w + N, 0.0f);
  for (int64_t jj = 0; jj < S; ++jj) {
    const int64_t rot = rotation(jj, S, N);
    const float sj = in.s[jj];
    for (int64_t i = 0; i < rot; ++i) w[i] += sj * wg[i - rot + N];
    for (int64_t i = rot; i < N; ++i) w[i] += sj * wg[i - rot];
  }
  // w = (w~ / max w~)^γ / Σ   (eq. 9), through l = ln(w~ / max w~) (-inf where w~ = 0)
  float mx = 0.0f;
  for (int64_t i = 0; i < N; ++i) mx = std::max(mx, w[i]);
  for (int64_t i = 0; i < N; ++i) l[i] = std::log(w[i] / mx);
  float total = 0.0f;
#pragma omp simd reduction(+ : total)
  for (int64_t i = 0; i < N; ++i) {
    w[i] = exp_approx(gamma * l[i]);
    total += w[i];
  }
  const float inv_total = 1.0f / total;
  for (int64_t i = 0; i < N; ++i) w[i] *= inv_total;
  saved[4 * N] = a;
  saved[4 * N + 1] = mx;
  saved[4 * N + 2] = total;
}

ATTN_VECTOR_CLONES
void head_address_row_backward(const HeadAddressDims& d, const HeadAddressRow& in, const float* w,
                               const float* saved, const float* dw, float* scratch, HeadAddressRowGrads& grads) {
  const int64_t N = d.N, M = d.M, S = d.S;
  const float* K = saved;
  const float* wc = saved + N;
  const float* wg = saved + 2 * N;
  const float* l = saved + 3 * N;
  const float a = saved[4 * N], mx = saved[4 * N + 1], total = saved[4 * N + 2];
  const float beta = in.beta, g = in.g, gamma = in.gamma;
  float* dws = scratch;       // dL/dw~, later dL/dK
  float* dwg = scratch + N;   // dL/dw_g

  // Sharpening (sharpen_backward's formulas, with (w~/max)^(γ-1) = exp((γ-1) l)); terms with
  // w = 0 are 0 (l may be -inf there).
  float r = 0.0f, dy_y_l = 0.0f, y_l = 0.0f;
#pragma omp simd reduction(+ : r, dy_y_l, y_l)
  for (int64_t i = 0; i < N; ++i) {
    const float y = w[i], li = y > 0.0f ? l[i] : 0.0f;
    r += dw[i] * y;
    dy_y_l += dw[i] * y * li;
    y_l += y * li;
  }
  grads.dgamma = dy_y_l - r * y_l;
  const float scale = gamma / (mx * total);
  const float rf = r;
  if (gamma == 1.0f) {   // (w~/max)^0 = 1, also where w~ = 0 (l = -inf would give 0 * inf)
    for (int64_t i = 0; i < N; ++i) dws[i] = scale * (dw[i] - rf);
  } else {
    const float gm1 = gamma - 1.0f;
    for (int64_t i = 0; i < N; ++i) dws[i] = scale * (dw[i] - rf) * exp_approx(gm1 * l[i]);
  }

  // Shift: dw_g[(i - rot) mod Nm] += s_j dw~[i];  ds_j = Σ_i dw~[i] w_g[(i - rot) mod Nm]
  std::fill(dwg, dwg + N, 0.0f);
  for (int64_t jj = 0; jj < S; ++jj) {
    const int64_t rot = rotation(jj, S, N);
    const float sj = in.s[jj];
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < rot; ++i) {
      dwg[i - rot + N] += sj * dws[i];
      acc += dws[i] * wg[i - rot + N];
    }
#pragma omp simd reduction(+ : acc)
    for (int64_t i = rot; i < N; ++i) {
      dwg[i - rot] += sj * dws[i];
      acc += dws[i] * wg[i - rot];
    }
    grads.ds[jj] = acc;
  }

  // Interpolation and the content softmax: dz_i = g w_c,i (dw_g,i - Σ_j dw_g,j w_c,j).
  float dg = 0.0f, sdw = 0.0f;
#pragma omp simd reduction(+ : dg, sdw)
  for (int64_t i = 0; i < N; ++i) {
    dg += dwg[i] * (wc[i] - in.w_prev[i]);
    sdw += dwg[i] * wc[i];
  }
  grads.dg = dg;
  if (grads.dw_prev != nullptr)
    for (int64_t i = 0; i < N; ++i) grads.dw_prev[i] += (1.0f - g) * dwg[i];
  float dbeta = 0.0f;
#pragma omp simd reduction(+ : dbeta)
  for (int64_t i = 0; i < N; ++i) {
    const float dz = g * wc[i] * (dwg[i] - sdw);
    dbeta += dz * K[i];
    dws[i] = beta * dz;   // dK_i
  }
  grads.dbeta = dbeta;

  // Cosine similarity (cosine_similarity_backward's formulas; D = a c + eps).
  float* dk = grads.dk;
  std::fill(dk, dk + M, 0.0f);
  double k_coef = 0.0;
  for (int64_t i = 0; i < N; ++i) {
    const float dK = dws[i];
    if (dK == 0.0f) continue;
    const float c = in.mem_norm[i];
    const float D = a * c + kCosineEps;
    const float to_k = dK / D;
    const float to_row = c > 0.0f ? -dK * K[i] * a / (D * c) : 0.0f;
    const float* row = in.mem + i * M;
    for (int64_t m = 0; m < M; ++m) dk[m] += to_k * row[m];
    if (grads.dmem != nullptr) {
      float* drow = grads.dmem + i * M;
      for (int64_t m = 0; m < M; ++m) drow[m] += to_k * in.k[m] + to_row * row[m];
    }
    k_coef += static_cast<double>(dK) * K[i] * c / D;
  }
  if (a > 0.0f) {
    const float sk = static_cast<float>(-k_coef / a);
    for (int64_t m = 0; m < M; ++m) dk[m] += sk * in.k[m];
  }
}

namespace {

// Every entry of t (rows of `width`) in [lo, hi], finite; `expected` says so in words.
void check_range(const Tensor& t, int64_t width, const std::string& name, float lo, float hi,
                 const char* expected) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.at(i);
    if (v >= lo && v <= hi && std::isfinite(v)) continue;
    // (Appended piece by piece: GCC 12 warns falsely on "[" + std::string inlined here.)
    std::string message = "head_address: " + name;
    message.append("[");
    if (width > 0) message.append(std::to_string(i / width)).append(", ").append(std::to_string(i % width));
    else message.append(std::to_string(i));
    message.append("]");
    throw DataError(message + " = " + std::to_string(v) + ", expected " + expected);
  }
}

}  // namespace

Tensor head_address_forward(const Tensor& k, const Tensor& beta, const Tensor& g, const Tensor& s,
                            const Tensor& gamma, const Tensor& w_prev, const Tensor& mem,
                            HeadAddressCache* cache) {
  check_tensor(mem, {kAny, kAny, kAny}, "head_address: mem [B, N, M]");
  const int64_t B = mem.dim(0), N = mem.dim(1), M = mem.dim(2);
  check_tensor(k, {B, M}, "head_address: k [B, M]");
  check_tensor(beta, {B}, "head_address: beta [B]");
  check_tensor(g, {B}, "head_address: g [B]");
  check_tensor(s, {B, kAny}, "head_address: s [B, S]");
  check_tensor(gamma, {B}, "head_address: gamma [B]");
  check_tensor(w_prev, {B, N}, "head_address: w_prev [B, N]");
  const int64_t S = s.dim(1);
  if (S % 2 == 0)
    throw ShapeError("head_address: s [B, S] has " + std::to_string(S) +
                     " shifts, expected an odd number (shifts -(S-1)/2 ... (S-1)/2)");
  if (N == 0) throw ShapeError("head_address: mem [B, N, M] has no memory rows (N = 0)");
  const float big = std::numeric_limits<float>::max();
  check_range(beta, 0, "beta", 0.0f, big, "a finite value >= 0");
  check_range(g, 0, "g", 0.0f, 1.0f, "a value in [0, 1]");
  check_range(gamma, 0, "gamma", 1.0f, big, "a finite value >= 1 (Graves et al. 2014, eq. 9)");
  check_range(s, S, "s", 0.0f, big, "a finite shift weight >= 0");
  check_range(w_prev, N, "w_prev", 0.0f, big, "a finite weight >= 0");

  const HeadAddressDims d{N, M, S};
  const int64_t Z = head_address_saved_size(N);
  Tensor w = Tensor::uninitialized({B, N}), mem_norm = Tensor::uninitialized({B, N});
  Tensor saved = Tensor::uninitialized({B, Z});
  for (int64_t b = 0; b < B; ++b) {
    const float* mb = mem.data() + b * N * M;
    memory_row_norms(mb, N, M, mem_norm.data() + b * N);
    const HeadAddressRow row{k.data() + b * M, beta.at(b),          g.at(b), s.data() + b * S, gamma.at(b),
                             w_prev.data() + b * N, mb, mem_norm.data() + b * N};
    head_address_row_forward(d, row, w.data() + b * N, saved.data() + b * Z);
    if (!(saved.at(b * Z + 4 * N + 1) > 0.0f))
      throw DataError("head_address: row " + std::to_string(b) +
                      " of the shifted weighting is all zero (w_prev and s leave no mass to sharpen)");
  }
  flops::add(B * (M + 2 * N * M + N * S + 3 * N));
  if (cache) *cache = {k, beta, g, s, gamma, w_prev, mem, mem_norm, w, saved};
  return w;
}

HeadAddressGrads head_address_backward(const Tensor& dw, const HeadAddressCache& cache) {
  const int64_t B = cache.mem.dim(0), N = cache.mem.dim(1), M = cache.mem.dim(2), S = cache.s.dim(1);
  check_tensor(dw, {B, N}, "head_address_backward: dw [B, N]");
  const HeadAddressDims d{N, M, S};
  const int64_t Z = head_address_saved_size(N);
  HeadAddressGrads out{Tensor({B, M}), Tensor({B}), Tensor({B}), Tensor({B, S}),
                       Tensor({B}), Tensor({B, N}), Tensor({B, N, M})};
  Tensor scratch({head_address_scratch_size(N)});
  for (int64_t b = 0; b < B; ++b) {
    const HeadAddressRow row{cache.k.data() + b * M,      cache.beta.at(b),           cache.g.at(b),
                             cache.s.data() + b * S,      cache.gamma.at(b),          cache.w_prev.data() + b * N,
                             cache.mem.data() + b * N * M, cache.mem_norm.data() + b * N};
    HeadAddressRowGrads grads;
    grads.dk = out.dk.data() + b * M;
    grads.ds = out.ds.data() + b * S;
    grads.dw_prev = out.dw_prev.data() + b * N;
    grads.dmem = out.dmem.data() + b * N * M;
    head_address_row_backward(d, row, cache.w.data() + b * N, cache.saved.data() + b * Z, dw.data() + b * N,
                              scratch.data(), grads);
    out.dbeta.at(b) = grads.dbeta;
    out.dg.at(b) = grads.dg;
    out.dgamma.at(b) = grads.dgamma;
  }
  flops::add(B * (M + 3 * N * M + 2 * N * S + 4 * N));
  return out;
}

}  // namespace attn::ops

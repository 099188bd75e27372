// Layer norm forward (two passes per row for a stable variance, one to write y) and backward
// (two passes per row, the second writing dx and the row's share of dgamma and dbeta).
#include "attn/ops/layer_norm.hpp"

#include "attn/core/threading.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace attn::ops {
namespace {

// Parameter gradients are summed over at most this many fixed blocks of rows, each serially,
// then over the blocks in order: deterministic for any thread count, with a small buffer.
constexpr int64_t kMaxBlocks = 64;

// Shortest form of a float for messages ("1", "-0.5"), unlike std::to_string's "1.000000".
std::string str(float v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

int64_t last_dim(const Tensor& x, const char* label) {
  if (x.rank() < 1) throw ShapeError(std::string(label) + " has shape [], expected rank >= 1");
  check_tensor(x, x.shape(), label);   // dtype
  const int64_t D = x.dim(-1);
  if (D == 0) throw ShapeError(std::string(label) + " has shape " + to_string(x.shape()) + ", expected D >= 1");
  return D;
}

}  // namespace

Tensor layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                          LayerNormCache* cache) {
  const int64_t D = last_dim(x, "layer_norm: x [..., D]");
  check_tensor(gamma, {D}, "layer_norm: gamma [D]");
  check_tensor(beta, {D}, "layer_norm: beta [D]");
  if (!(eps >= 0.0f) || std::isinf(eps))
    throw ConfigError("layer_norm: eps must be finite and >= 0, got " + str(eps));
  const int64_t rows = x.numel() / D;
  Tensor y = Tensor::uninitialized(x.shape());
  Tensor mean = Tensor::uninitialized({rows}), rstd = Tensor::uninitialized({rows});
  const float *xp = x.data(), *g = gamma.data(), *b = beta.data();
  float *yp = y.data(), *mp = mean.data(), *rp = rstd.data();
  const float inv_d = 1.0f / static_cast<float>(D);
#pragma omp parallel for schedule(static) if (worth_splitting(rows * D))
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * D;
    float* yr = yp + r * D;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < D; ++j) s += xr[j];
    const float mu = s * inv_d;
    float v = 0.0f;
#pragma omp simd reduction(+ : v)
    for (int64_t j = 0; j < D; ++j) v += (xr[j] - mu) * (xr[j] - mu);
    const float rs = 1.0f / std::sqrt(v * inv_d + eps);
#pragma omp simd
    for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mu) * rs * g[j] + b[j];
    mp[r] = mu;
    rp[r] = rs;
  }
  if (cache) *cache = LayerNormCache{x, mean, rstd};
  return y;
}

Tensor layer_norm_backward(const Tensor& dy, const Tensor& gamma, const LayerNormCache& cache,
                           Tensor& dgamma, Tensor& dbeta) {
  if (!cache.x.defined())
    throw Error("layer_norm_backward: the cache is empty (pass a cache to the forward call)");
  const int64_t D = cache.x.dim(-1), rows = cache.x.numel() / D;
  check_tensor(dy, cache.x.shape(), "layer_norm_backward: dy [..., D]");
  check_tensor(gamma, {D}, "layer_norm_backward: gamma [D]");
  check_tensor(dgamma, {D}, "layer_norm_backward: dgamma [D]");
  check_tensor(dbeta, {D}, "layer_norm_backward: dbeta [D]");

  Tensor dx = Tensor::uninitialized(dy.shape());
  const float *xp = cache.x.data(), *dyp = dy.data(), *g = gamma.data();
  const float *mp = cache.mean.data(), *rp = cache.rstd.data();
  float* dxp = dx.data();
  const float inv_d = 1.0f / static_cast<float>(D);
  const int64_t block_rows = std::max<int64_t>(1, (rows + kMaxBlocks - 1) / kMaxBlocks);
  const int64_t blocks = (rows + block_rows - 1) / block_rows;
  std::vector<float> partial(static_cast<size_t>(blocks * 2 * D), 0.0f);   // [blocks, {dgamma, dbeta}, D]
#pragma omp parallel for schedule(static) if (worth_splitting(rows * D))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    float* pg = partial.data() + blk * 2 * D;
    float* pb = pg + D;
    for (int64_t r = blk * block_rows; r < std::min(rows, (blk + 1) * block_rows); ++r) {
      const float *xr = xp + r * D, *dyr = dyp + r * D;
      float* dxr = dxp + r * D;
      const float mu = mp[r], rs = rp[r];
      float mean_g = 0.0f, mean_gx = 0.0f;
#pragma omp simd reduction(+ : mean_g, mean_gx)
      for (int64_t j = 0; j < D; ++j) {
        const float gj = dyr[j] * g[j];
        mean_g += gj;
        mean_gx += gj * (xr[j] - mu) * rs;
      }
      mean_g *= inv_d;
      mean_gx *= inv_d;
#pragma omp simd
      for (int64_t j = 0; j < D; ++j) {
        const float xh = (xr[j] - mu) * rs;
        dxr[j] = rs * (dyr[j] * g[j] - mean_g - xh * mean_gx);
        pg[j] += dyr[j] * xh;
        pb[j] += dyr[j];
      }
    }
  }
  float *dg = dgamma.data(), *db = dbeta.data();
  for (int64_t blk = 1; blk < blocks; ++blk)
    for (int64_t j = 0; j < 2 * D; ++j) partial[j] += partial[blk * 2 * D + j];
  for (int64_t j = 0; j < D && blocks > 0; ++j) {
    dg[j] += partial[j];
    db[j] += partial[D + j];
  }
  return dx;
}

}  // namespace attn::ops

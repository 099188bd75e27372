// Dropout: the uniforms come from Rng::fill_uniform (counter-based, parallel) straight into the
// mask buffer, which one fused pass then turns into the scaled mask while writing y.
#include "attn/ops/dropout.hpp"

#include "attn/core/threading.hpp"

#include <sstream>
#include <string>

namespace attn::ops {
namespace {

// Shortest form of a float for messages ("1", "-0.5"), unlike std::to_string's "1.000000".
std::string str(float v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

Tensor dropout_forward(const Tensor& x, float p, bool training, Rng& rng, DropoutCache* cache) {
  if (!(p >= 0.0f && p < 1.0f))
    throw ConfigError("dropout: p must be in [0, 1), got " + str(p));
  check_tensor(x, x.shape(), "dropout: x");   // dtype
  if (cache) cache->mask = Tensor();
  if (p == 0.0f || !training) return x;

  Tensor mask = Tensor::uninitialized(x.shape()), y = Tensor::uninitialized(x.shape());
  rng.fill_uniform(mask.values(), 0.0f, 1.0f);
  const int64_t n = x.numel();
  const float keep_scale = 1.0f / (1.0f - p);
  const float* xp = x.data();
  float *mp = mask.data(), *yp = y.data();
#pragma omp parallel for simd schedule(static) if (worth_splitting(n))
  for (int64_t i = 0; i < n; ++i) {
    const float m = mp[i] >= p ? keep_scale : 0.0f;
    mp[i] = m;
    yp[i] = xp[i] * m;
  }
  if (cache) cache->mask = mask;
  return y;
}

Tensor dropout_backward(const Tensor& dy, const DropoutCache& cache) {
  if (!cache.mask.defined()) return dy;
  check_tensor(dy, cache.mask.shape(), "dropout_backward: dy");
  Tensor dx = Tensor::uninitialized(dy.shape());
  const int64_t n = dy.numel();
  const float *dyp = dy.data(), *mp = cache.mask.data();
  float* dxp = dx.data();
#pragma omp parallel for simd schedule(static) if (worth_splitting(n))
  for (int64_t i = 0; i < n; ++i) dxp[i] = dyp[i] * mp[i];
  return dx;
}

}  // namespace attn::ops

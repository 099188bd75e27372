#include "attn/nn/init.hpp"

#include <cmath>

namespace attn::nn {

Tensor glorot_uniform(const Shape& shape, Rng& rng, float gain) {
  if (shape.empty()) throw ShapeError("glorot_uniform: a weight needs at least one dimension");
  const int64_t fan_in = shape.back();
  const int64_t fan_out = shape.size() > 1 ? numel(shape) / fan_in : 1;
  const float bound = gain * std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  return rand_uniform(shape, rng, -bound, bound);
}

Tensor normal_init(const Shape& shape, Rng& rng, float stddev) { return randn(shape, rng, stddev); }

}  // namespace attn::nn

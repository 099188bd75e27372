// Sinusoidal and learned positional encodings.
#include "attn/nn/positional_encoding.hpp"

#include <cmath>

namespace attn::nn {
namespace {

void check_rows(const std::string& what, int64_t offset, int64_t T, int64_t L) {
  if (offset < 0 || offset + T > L)
    throw ShapeError(what + ": positions [" + std::to_string(offset) + ", " + std::to_string(offset + T) +
                     ") do not fit a table of " + std::to_string(L) + " positions");
}

}  // namespace

double sinusoidal_value(int64_t pos, int64_t column, int64_t d_model) {
  const int64_t i = column / 2;
  const double angle = static_cast<double>(pos) *
                       std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d_model));
  return column % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

Tensor sinusoidal_encoding(int64_t positions, int64_t d_model) {
  if (positions < 0 || d_model < 1)
    throw ConfigError("sinusoidal encoding: need positions >= 0 and d_model >= 1, got " +
                      std::to_string(positions) + " and " + std::to_string(d_model));
  Tensor pe({positions, d_model});
  float* p = pe.data();
  for (int64_t pos = 0; pos < positions; ++pos)
    for (int64_t j = 0; j < d_model; ++j) p[pos * d_model + j] = static_cast<float>(sinusoidal_value(pos, j, d_model));
  return pe;
}

void add_positional_encoding(Tensor& x, const Tensor& table, int64_t offset) {
  check_tensor(x, {kAny, kAny, kAny}, "positional encoding: x [B, T, D]");
  const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
  check_tensor(table, {kAny, D}, "positional encoding: table [L, D]");
  check_rows("positional encoding", offset, T, table.dim(0));
  float* px = x.data();
  const float* pt = table.data() + offset * D;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T * D; ++i) px[b * T * D + i] += pt[i];
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t max_len, int64_t d_model,
                                                       const std::string& name, Rng& rng) {
  if (max_len < 1 || d_model < 1)
    throw ConfigError("learned positional embedding: need max_len >= 1 and d_model >= 1, got " +
                      std::to_string(max_len) + " and " + std::to_string(d_model));
  table = Param(name + "/table", randn({max_len, d_model}, rng, 0.02f));
}

Tensor LearnedPositionalEmbedding::forward(const Tensor& x, int64_t offset) const {
  Tensor y = x.clone();
  add_positional_encoding(y, table.value, offset);
  return y;
}

void LearnedPositionalEmbedding::backward(const Tensor& dy, int64_t offset) {
  const int64_t D = table.value.dim(1);
  check_tensor(dy, {kAny, kAny, D}, "learned positional embedding backward: dy [B, T, D]");
  const int64_t B = dy.dim(0), T = dy.dim(1);
  check_rows("learned positional embedding backward", offset, T, max_len());
  float* g = table.grad.data() + offset * D;
  const float* d = dy.data();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T * D; ++i) g[i] += d[b * T * D + i];
}

}  // namespace attn::nn

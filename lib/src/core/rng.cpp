// Philox4x32-10 and the distributions built on it.
#include "attn/core/rng.hpp"

#include <cmath>
#include <numbers>

namespace attn {
namespace {

constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

inline float to_unit(uint32_t x) { return static_cast<float>(x >> 8) * 0x1.0p-24f; }   // [0, 1)

// The value at position `pos` of stream `seed`: lane pos%4 of block pos/4.
inline uint32_t value_at(uint64_t seed, uint64_t pos) {
  uint32_t block[4];
  Rng::philox(seed, pos / 4, block);
  return block[pos % 4];
}

}  // namespace

void Rng::philox(uint64_t seed, uint64_t index, uint32_t out[4]) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0, p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0, n1 = static_cast<uint32_t>(p1);
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1, n3 = static_cast<uint32_t>(p0);
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += kW0; k1 += kW1;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

uint32_t Rng::next_u32() { return value_at(state_.seed, state_.counter++); }

float Rng::uniform() { return to_unit(next_u32()); }

float Rng::uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }

float Rng::normal() {
  const float u1 = 1.0f - uniform();   // (0, 1]: log is finite
  const float u2 = uniform();
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
}

int64_t Rng::uniform_int(int64_t n) {
  if (n <= 0) throw ConfigError("Rng::uniform_int: n must be > 0, got " + std::to_string(n));
  // 64 random bits, reduced; the bias (< n / 2^64) is negligible for any n used here.
  const uint64_t hi = next_u32(), lo = next_u32();
  return static_cast<int64_t>(((hi << 32) | lo) % static_cast<uint64_t>(n));
}

void Rng::fill_uniform(std::span<float> out, float lo, float hi) {
  const uint64_t seed = state_.seed, base = state_.counter;
  const int64_t n = static_cast<int64_t>(out.size());
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) out[i] = lo + (hi - lo) * to_unit(value_at(seed, base + i));
  state_.counter += out.size();
}

void Rng::fill_normal(std::span<float> out, float mean, float stddev) {
  const uint64_t seed = state_.seed, first = (state_.counter + 3) / 4;   // next unused block
  const int64_t n = static_cast<int64_t>(out.size());
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    uint32_t block[4];
    philox(seed, first + static_cast<uint64_t>(i), block);   // one block per element
    const float u1 = 1.0f - to_unit(block[0]), u2 = to_unit(block[1]);
    out[i] = mean + stddev * std::sqrt(-2.0f * std::log(u1)) *
                        std::cos(2.0f * std::numbers::pi_v<float> * u2);
  }
  state_.counter = (first + out.size()) * 4;   // past every block used
}

Rng Rng::fork(uint64_t label) const {
  uint32_t block[4];
  philox(state_.seed ^ 0x5851F42D4C957F2Dull, label, block);
  return Rng((static_cast<uint64_t>(block[0]) << 32) | block[1]);
}

Tensor randn(const Shape& shape, Rng& rng, float stddev) {
  Tensor t(shape);
  rng.fill_normal(t.values(), 0.0f, stddev);
  return t;
}

Tensor rand_uniform(const Shape& shape, Rng& rng, float lo, float hi) {
  Tensor t(shape);
  rng.fill_uniform(t.values(), lo, hi);
  return t;
}

}  // namespace attn

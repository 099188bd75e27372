// Philox4x32-10 and the distributions built on it.
#include "attn/core/rng.hpp"

#include <algorithm>
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

// Philox4x32-10 of kBatch consecutive blocks first, first + 1, ... at once, written lane by
// lane in stream order: out[4 j + lane] = lane `lane` of block first + j, exactly Rng::philox's
// values. The blocks are independent, so the rounds run as a SIMD loop over them (GCC turns
// the 32x32 -> 64-bit products into vpmuludq); one block per call would be scalar.
constexpr int64_t kBatch = 16;
void philox_batch(uint64_t seed, uint64_t first, uint32_t* out) {
  alignas(64) uint32_t c0[kBatch], c1[kBatch], c2[kBatch], c3[kBatch];
  for (int64_t j = 0; j < kBatch; ++j) {
    const uint64_t index = first + static_cast<uint64_t>(j);
    c0[j] = static_cast<uint32_t>(index);
    c1[j] = static_cast<uint32_t>(index >> 32);
    c2[j] = 0;
    c3[j] = 0;
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
#pragma omp simd
    for (int64_t j = 0; j < kBatch; ++j) {
      const uint64_t p0 = static_cast<uint64_t>(kM0) * c0[j], p1 = static_cast<uint64_t>(kM1) * c2[j];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[j] ^ k0, n1 = static_cast<uint32_t>(p1);
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[j] ^ k1, n3 = static_cast<uint32_t>(p0);
      c0[j] = n0;
      c1[j] = n1;
      c2[j] = n2;
      c3[j] = n3;
    }
    k0 += kW0;
    k1 += kW1;
  }
  for (int64_t j = 0; j < kBatch; ++j) {
    out[4 * j] = c0[j];
    out[4 * j + 1] = c1[j];
    out[4 * j + 2] = c2[j];
    out[4 * j + 3] = c3[j];
  }
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

// Element i is value_at(seed, counter + i). The positions that start a block are cut into
// chunks of kBatch whole blocks (4 kBatch values), each made by one philox_batch call: every
// block is computed once and all four of its lanes are used. The few values before the first
// block boundary and after the last whole chunk come from value_at.
void Rng::fill_uniform(std::span<float> out, float lo, float hi) {
  if (!draws_) return;
  const uint64_t seed = state_.seed, base = state_.counter;
  const int64_t n = static_cast<int64_t>(out.size());
  const float scale = hi - lo;
  const int64_t head = std::min<int64_t>(n, static_cast<int64_t>((4 - base % 4) % 4));
  for (int64_t i = 0; i < head; ++i) out[i] = lo + scale * to_unit(value_at(seed, base + i));
  constexpr int64_t kChunk = 4 * kBatch;
  const int64_t chunks = (n - head) / kChunk;
  const uint64_t first_block = (base + static_cast<uint64_t>(head)) / 4;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t c = 0; c < chunks; ++c) {
    alignas(64) uint32_t bits[kChunk];
    philox_batch(seed, first_block + static_cast<uint64_t>(c * kBatch), bits);
    float* o = out.data() + head + c * kChunk;
#pragma omp simd
    for (int64_t k = 0; k < kChunk; ++k) o[k] = lo + scale * to_unit(bits[k]);
  }
  for (int64_t i = head + chunks * kChunk; i < n; ++i) out[i] = lo + scale * to_unit(value_at(seed, base + i));
  state_.counter += out.size();
}

void Rng::fill_normal(std::span<float> out, float mean, float stddev) {
  if (!draws_) return;
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
  Rng out((static_cast<uint64_t>(block[0]) << 32) | block[1]);
  out.draws_ = draws_;
  return out;
}

Rng Rng::drawing_nothing() {
  Rng out;
  out.draws_ = false;
  return out;
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

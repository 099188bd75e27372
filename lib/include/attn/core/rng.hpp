// Seeded, counter-based random numbers (Philox4x32-10, Salmon et al. 2011).
//
// The n-th random number of a stream is a pure function of (seed, n), so a parallel loop can
// draw element i from position counter+i without any shared state: results do not depend on
// thread scheduling, and the whole state is two integers that a checkpoint stores.
#pragma once
#include <cstdint>
#include <span>

#include "attn/core/tensor.hpp"

namespace attn {

struct RngState {
  uint64_t seed = 0;
  uint64_t counter = 0;   // how many 32-bit values have been drawn
};

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : state_{seed, 0} {}
  explicit Rng(RngState state) : state_(state) {}

  RngState state() const { return state_; }
  void set_state(RngState state) { state_ = state; }

  uint32_t next_u32();
  float uniform();                          // [0, 1)
  float uniform(float lo, float hi);        // [lo, hi)
  float normal();                           // standard normal (Box-Muller)
  int64_t uniform_int(int64_t n);           // [0, n), n > 0
  bool bernoulli(float p) { return uniform() < p; }

  // Bulk draws: element i is a function of (seed, counter + i) only; parallel and reproducible.
  void fill_uniform(std::span<float> out, float lo, float hi);
  void fill_normal(std::span<float> out, float mean, float stddev);

  // An independent stream derived from this one's seed and a label (e.g. a worker index).
  Rng fork(uint64_t label) const;

  // A stream whose bulk draws draw nothing: fill_uniform and fill_normal (so randn and
  // rand_uniform, every parameter initialiser) leave their values as they are, zeros, and so do
  // its forks. For building a model whose parameters are all read from a file next
  // (train::load_model): drawing them is work thrown away, seconds for a model of hundreds of
  // megabytes (and a damaged /config asking for one would cost more than its allocation).
  static Rng drawing_nothing();

  // The raw generator: 4 values for block `index` of key `seed`.
  static void philox(uint64_t seed, uint64_t index, uint32_t out[4]);

 private:
  RngState state_;
  bool draws_ = true;
};

Tensor randn(const Shape& shape, Rng& rng, float stddev = 1.0f);
Tensor rand_uniform(const Shape& shape, Rng& rng, float lo, float hi);

}  // namespace attn

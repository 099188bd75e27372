// memnet::MemN2N: construction, the forward over a batch of questions, the loss, and the
// backward (the forward's steps in reverse order). The configuration is in memnet_config.cpp.
//
// Buffers (allocated once per call; S = memory_tables(), K = Nhop; only the window's slots of
// Mem and dMem are written and read):
//   tix, slen [B, Ms]      temporal index and word count J of every slot
//   Mem    [S, B, Ms, E]   sentence embeddings of every memory table, temporal row added:
//                          table in(k) gives hop k's m, table out(k) its c (0-based hop k:
//                          adjacent in = k, out = k + 1; layerwise in = 0 (A), out = 1 (C))
//   U      [K + 1, B, E]   u^1 .. u^{K+1}: block k is the state hop k reads (block 0 the question)
//   P      [B, K, Ms]      every hop's p (0 outside the window): answer()'s attention as it is
//   logits [B, V]          the answer logits; a training step writes dlogits over them
// Backward: dU [K + 1, B, E] (the gradient w.r.t. each u), dMem [S, B, Ms, E], dP [B, Ms].
#include "attn/families/memnet/model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

#include <omp.h>

#include "attn/blas/blas.hpp"
#include "attn/core/flops.hpp"
#include "attn/core/row_blocks.hpp"
#include "attn/core/threading.hpp"
#include "attn/ops/softmax.hpp"

namespace attn::memnet {
namespace {

using blas::Trans;

struct Dims {
  int64_t B = 0, Ms = 0, Ws = 0, Wq = 0;   // the batch
  int64_t V = 0, E = 0, K = 0, S = 0, Mm = 0;
  bool position = false, temporal = false, adjacent = true;
};

// The 10% of random noise as a whole percentage, so that ceil(n' / 10) is integer arithmetic.
constexpr int64_t kNoisePercent = 10;
static_assert(kNoisePercent == static_cast<int64_t>(kMemN2NRandomNoise * 100.0f + 0.5f));

}  // namespace

struct MemN2NImpl {
  struct Run {
    Dims d;
    bool linear_start = false;
    std::vector<int32_t> n, w0;   // [B] story_len and the window's first slot
    std::vector<int32_t> tix;     // [B * Ms] temporal index of a window slot
    std::vector<int32_t> slen;    // [B * Ms] words of a sentence (J)
    std::vector<int32_t> qlen;    // [B] words of the question
    std::vector<float> pe;        // position encoding: l of J-word sentences at pe_row(J)
    int64_t Wmax = 0;             // max(Ws, Wq)
    std::vector<int64_t> cost;    // [B] a row's share of the work, for the row blocks
    Tensor Mem, U, P, logits;

    // l_j ∘ for the j-th word (rows of E) of a J-word sentence; null with bow encoding.
    const float* pe_row(int64_t J) const { return d.position ? pe.data() + J * Wmax * d.E : nullptr; }
  };

  static Dims dims(const MemN2N& m, const QaBatch& batch);
  static void prepare(const MemN2N& m, const QaBatch& batch, Rng* noise, Run& run);
  static void forward(const MemN2N& m, const QaBatch& batch, Run& run);
  static void forward_row(const MemN2N& m, const QaBatch& batch, Run& run, int64_t b);
  // Cross-entropy of the answers: the sums, the predictions (when asked) and, when asked,
  // dlogits of the mean over the batch written over run.logits.
  static MemN2NStats loss(Run& run, const QaBatch& batch, int32_t* predictions, bool backward);
  static void backward(MemN2N& m, const QaBatch& batch, Run& run);
  static void backward_row(const MemN2N& m, Run& run, Tensor& dU, Tensor& dMem, Tensor& dP, int64_t b);
  // The embedding tables' gradients from dMem and du^1: the tables of units [u0, u1), a unit
  // being memory table s < S with its temporal table (and, adjacent, unit 0 the question's
  // too: B = A1), or unit S the question's table B (layerwise).
  static void scatter_tables(MemN2N& m, const QaBatch& batch, const Run& run, const Tensor& dU, const Tensor& dMem,
                             int64_t u0, int64_t u1);
  static int64_t units(const Dims& d) { return d.adjacent ? d.S : d.S + 1; }
  static int64_t question_unit(const Dims& d) { return d.adjacent ? 0 : d.S; }

  // The tables of the tying (see memnet.hpp).
  static int64_t in_table(const Dims& d, int64_t k) { return d.adjacent ? k : 0; }
  static int64_t out_table(const Dims& d, int64_t k) { return d.adjacent ? k + 1 : 1; }
  static const Param& question_table(const MemN2N& m) {
    return m.config_.tying == MemN2NTying::adjacent ? m.memory_.front() : m.question_;
  }
  static Param& question_table(MemN2N& m) {
    return m.config_.tying == MemN2NTying::adjacent ? m.memory_.front() : m.question_;
  }
  static const Param& answer_table(const MemN2N& m) {
    return m.config_.tying == MemN2NTying::adjacent ? m.memory_.back() : m.output_;
  }
  static Param& answer_table(MemN2N& m) {
    return m.config_.tying == MemN2NTying::adjacent ? m.memory_.back() : m.output_;
  }
};

namespace {

using Impl = MemN2NImpl;

// Four floats as one SIMD register (a GCC/Clang vector extension: SSE on x86-64, NEON on
// ARM). E is small (20, 50), so loops over it written for the auto-vectoriser spend most of
// their time in the prologue and epilogue that a runtime trip count needs; blocks of four with a
// scalar tail do not. Loads and stores go through memcpy: rows need not be 16-byte aligned.
typedef float f4 __attribute__((vector_size(16)));
inline f4 load4(const float* p) {
  f4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(float* p, f4 v) { std::memcpy(p, &v, sizeof v); }

// Kernels that sum rows of E floats. When the number of 4-float blocks NB = E / 4 is known at
// compile time, the sum of every block (and of the tail of E % 4) stays in registers across the
// rows; a sum kept in memory is stored and reloaded for every row it adds, a chain of
// store-to-load latencies that slowed these loops down (experiments/perf/memnet, "What attnlab's
// model does for this"). Each kernel is instantiated for NB = 0 .. kFixedBlocks - 1 (E < 68)
// and chosen once per batch row from a table; NB = -1 is the block-by-block version for wider
// rows. Either way every element is summed in row order.
constexpr int kFixedBlocks = 17;

// out = init + Σ_{j<J} l_j ∘ X[words_j]: a sentence embedding (init: the temporal row, or null
// for 0; l: the position encoding's J rows, or null for bow).
template <int NB, bool kPosition>
void embed_sum(const float* X, int64_t E, const int32_t* words, int64_t J, const float* l, const float* init,
               float* out) {
  if constexpr (NB >= 0) {
    f4 acc[NB > 0 ? NB : 1];
    float tail[3] = {0.0f, 0.0f, 0.0f};
    const int64_t rest = E - 4 * NB;
#pragma GCC unroll 16
    for (int q = 0; q < NB; ++q) acc[q] = init ? load4(init + 4 * q) : f4{0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t t = 0; t < rest; ++t) tail[t] = init ? init[4 * NB + t] : 0.0f;
    for (int64_t j = 0; j < J; ++j) {
      const float* x = X + static_cast<int64_t>(words[j]) * E;
      const float* lj = kPosition ? l + j * E : nullptr;
#pragma GCC unroll 16
      for (int q = 0; q < NB; ++q) {
        if constexpr (kPosition) acc[q] += load4(lj + 4 * q) * load4(x + 4 * q);
        else acc[q] += load4(x + 4 * q);
      }
      for (int64_t t = 0; t < rest; ++t) {
        if constexpr (kPosition) tail[t] += lj[4 * NB + t] * x[4 * NB + t];
        else tail[t] += x[4 * NB + t];
      }
    }
#pragma GCC unroll 16
    for (int q = 0; q < NB; ++q) store4(out + 4 * q, acc[q]);
    for (int64_t t = 0; t < rest; ++t) out[4 * NB + t] = tail[t];
  } else {
    for (int64_t c = 0; c < E; ++c) out[c] = init ? init[c] : 0.0f;
    const int64_t E4 = E & ~int64_t{3};
    for (int64_t c = 0; c < E4; c += 4) {
      f4 acc = load4(out + c);
      for (int64_t j = 0; j < J; ++j) {
        const f4 x = load4(X + static_cast<int64_t>(words[j]) * E + c);
        if constexpr (kPosition) acc += load4(l + j * E + c) * x;
        else acc += x;
      }
      store4(out + c, acc);
    }
    for (int64_t c = E4; c < E; ++c)
      for (int64_t j = 0; j < J; ++j) {
        const float x = X[static_cast<int64_t>(words[j]) * E + c];
        if constexpr (kPosition) out[c] += l[j * E + c] * x;
        else out[c] += x;
      }
  }
}

// The backward of embed_sum: dX[words_j] += l_j ∘ g, word by word (g held in registers).
template <int NB, bool kPosition>
void embed_scatter(float* dX, int64_t E, const int32_t* words, int64_t J, const float* l, const float* g) {
  if constexpr (NB >= 0) {
    f4 gq[NB > 0 ? NB : 1];
#pragma GCC unroll 16
    for (int q = 0; q < NB; ++q) gq[q] = load4(g + 4 * q);
    const int64_t rest = E - 4 * NB;
    for (int64_t j = 0; j < J; ++j) {
      float* dx = dX + static_cast<int64_t>(words[j]) * E;
      const float* lj = kPosition ? l + j * E : nullptr;
#pragma GCC unroll 16
      for (int q = 0; q < NB; ++q) {
        if constexpr (kPosition) store4(dx + 4 * q, load4(dx + 4 * q) + load4(lj + 4 * q) * gq[q]);
        else store4(dx + 4 * q, load4(dx + 4 * q) + gq[q]);
      }
      for (int64_t t = 4 * NB; t < 4 * NB + rest; ++t) {
        if constexpr (kPosition) dx[t] += lj[t] * g[t];
        else dx[t] += g[t];
      }
    }
  } else {
    const int64_t E4 = E & ~int64_t{3};
    for (int64_t j = 0; j < J; ++j) {
      float* dx = dX + static_cast<int64_t>(words[j]) * E;
      for (int64_t c = 0; c < E4; c += 4) {
        if constexpr (kPosition) store4(dx + c, load4(dx + c) + load4(l + j * E + c) * load4(g + c));
        else store4(dx + c, load4(dx + c) + load4(g + c));
      }
      for (int64_t c = E4; c < E; ++c) {
        if constexpr (kPosition) dx[c] += l[j * E + c] * g[c];
        else dx[c] += g[c];
      }
    }
  }
}

// out += Σ_{i<n} w_i R_i over the rows R_i = R + i E: a hop's o = Σ p_i c_i, and its backward.
template <int NB>
void weighted_sum(const float* R, int64_t E, const float* w, int64_t n, float* out) {
  if constexpr (NB >= 0) {
    f4 acc[NB > 0 ? NB : 1];
    float tail[3] = {0.0f, 0.0f, 0.0f};
    const int64_t rest = E - 4 * NB;
#pragma GCC unroll 16
    for (int q = 0; q < NB; ++q) acc[q] = load4(out + 4 * q);
    for (int64_t t = 0; t < rest; ++t) tail[t] = out[4 * NB + t];
    for (int64_t i = 0; i < n; ++i) {
      const float* r = R + i * E;
      const f4 wi = {w[i], w[i], w[i], w[i]};
#pragma GCC unroll 16
      for (int q = 0; q < NB; ++q) acc[q] += wi * load4(r + 4 * q);
      for (int64_t t = 0; t < rest; ++t) tail[t] += w[i] * r[4 * NB + t];
    }
#pragma GCC unroll 16
    for (int q = 0; q < NB; ++q) store4(out + 4 * q, acc[q]);
    for (int64_t t = 0; t < rest; ++t) out[4 * NB + t] = tail[t];
  } else {
    const int64_t E4 = E & ~int64_t{3};
    for (int64_t c = 0; c < E4; c += 4) {
      f4 acc = load4(out + c);
      for (int64_t i = 0; i < n; ++i) acc += f4{w[i], w[i], w[i], w[i]} * load4(R + i * E + c);
      store4(out + c, acc);
    }
    for (int64_t c = E4; c < E; ++c)
      for (int64_t i = 0; i < n; ++i) out[c] += w[i] * R[i * E + c];
  }
}

using EmbedFn = void (*)(const float*, int64_t, const int32_t*, int64_t, const float*, const float*, float*);
using ScatterFn = void (*)(float*, int64_t, const int32_t*, int64_t, const float*, const float*);
using WeightedSumFn = void (*)(const float*, int64_t, const float*, int64_t, float*);

template <bool kPosition, int... NB>
constexpr std::array<EmbedFn, sizeof...(NB)> embed_table(std::integer_sequence<int, NB...>) {
  return {&embed_sum<NB, kPosition>...};
}
template <bool kPosition, int... NB>
constexpr std::array<ScatterFn, sizeof...(NB)> scatter_table(std::integer_sequence<int, NB...>) {
  return {&embed_scatter<NB, kPosition>...};
}
template <int... NB>
constexpr std::array<WeightedSumFn, sizeof...(NB)> weighted_sum_table(std::integer_sequence<int, NB...>) {
  return {&weighted_sum<NB>...};
}

// The kernels for rows of E floats.
EmbedFn embed_kernel(int64_t E, bool position) {
  static constexpr auto bow = embed_table<false>(std::make_integer_sequence<int, kFixedBlocks>{});
  static constexpr auto pe = embed_table<true>(std::make_integer_sequence<int, kFixedBlocks>{});
  if (E / 4 >= kFixedBlocks) return position ? &embed_sum<-1, true> : &embed_sum<-1, false>;
  return (position ? pe : bow)[static_cast<size_t>(E / 4)];
}
ScatterFn scatter_kernel(int64_t E, bool position) {
  static constexpr auto bow = scatter_table<false>(std::make_integer_sequence<int, kFixedBlocks>{});
  static constexpr auto pe = scatter_table<true>(std::make_integer_sequence<int, kFixedBlocks>{});
  if (E / 4 >= kFixedBlocks) return position ? &embed_scatter<-1, true> : &embed_scatter<-1, false>;
  return (position ? pe : bow)[static_cast<size_t>(E / 4)];
}
WeightedSumFn weighted_sum_kernel(int64_t E) {
  static constexpr auto table = weighted_sum_table(std::make_integer_sequence<int, kFixedBlocks>{});
  if (E / 4 >= kFixedBlocks) return &weighted_sum<-1>;
  return table[static_cast<size_t>(E / 4)];
}

// a · b over n floats: four partial sums, then the tail.
inline float dot(const float* a, const float* b, int64_t n) {
  const int64_t n4 = n & ~int64_t{3};
  f4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n4; i += 4) acc += load4(a + i) * load4(b + i);
  float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (int64_t i = n4; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y = alpha x over n floats.
inline void scale(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

// y += alpha x over n floats.
inline void axpy(float alpha, const float* x, float* y, int64_t n) {
  const int64_t n4 = n & ~int64_t{3};
  const f4 a = {alpha, alpha, alpha, alpha};
  for (int64_t i = 0; i < n4; i += 4) store4(y + i, load4(y + i) + a * load4(x + i));
  for (int64_t i = n4; i < n; ++i) y[i] += alpha * x[i];
}

// Words before the first PAD (0) of a row of `width` ids.
inline int32_t word_count(const int32_t* words, int64_t width) {
  int32_t J = 0;
  while (J < width && words[J] != 0) ++J;
  return J;
}

// Work (multiply-adds: Run::cost times E) below which a parallel region stays on the calling
// thread. A region of the forward, the hops' backward or the tables' gradients is cheap per unit
// of work, so waking and joining the second thread, and more still its cache misses on rows the
// first wrote, outweigh the half of a small region it takes over. Measured training on the joint
// set: from 2^22 two threads gain; below it they lose, so every bAbI batch up to about 300
// questions runs on one thread (experiments/perf/memnet, "Threads: why 2 were slower than 1, and
// the fix").
constexpr int64_t kParallelMinWork = int64_t{1} << 22;

// The threads a loop over `work` multiply-adds gets: one inside a parallel region or below
// kParallelMinWork, else all of them.
int threads_for(int64_t work) {
  if (in_parallel_region() || work < kParallelMinWork) return 1;
  return num_parts();
}

std::string id_range(int64_t V) { return " is outside [0, V = " + std::to_string(V) + ")"; }

}  // namespace

void memn2n_temporal_indices(std::span<const int32_t> counts, int64_t memory_size, Rng* noise,
                             std::span<int32_t> out) {
  int64_t total = 0;
  for (const int32_t count : counts) {
    if (count < 0) throw DataError("memn2n_temporal_indices: a window of " + std::to_string(count) + " sentences");
    total += count;
  }
  if (static_cast<int64_t>(out.size()) != total)
    throw ShapeError("memn2n_temporal_indices: out has " + std::to_string(out.size()) + " entries, expected " +
                     std::to_string(total) + " (the sum of the counts)");
  int64_t at = 0;
  if (noise == nullptr) {
    for (const int32_t count : counts)
      for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(at++)] = static_cast<int32_t>(count - 1 - i);
    return;
  }
  // The draws are uniform floats k / 2^24 (Rng::fill_uniform, batched), used as the integer k.
  constexpr float kUnit = 16777216.0f;   // 2^24
  auto bits = [&](float u) { return static_cast<int64_t>(u * kUnit); };
  // nblank ~ U{0, ..., ceil(count / 10)} empty memories per example, then count + nblank draws
  // each for the places in time.
  const size_t B = counts.size();
  std::vector<float> u(B);
  noise->fill_uniform(u, 0.0f, 1.0f);
  std::vector<int64_t> places(B);
  int64_t draws = 0;
  for (size_t b = 0; b < B; ++b) {
    const int64_t most = (counts[b] * kNoisePercent + 99) / 100;
    places[b] = counts[b] + ((bits(u[b]) * (most + 1)) >> 24);
    draws += places[b];
  }
  u.resize(static_cast<size_t>(draws));
  noise->fill_uniform(u, 0.0f, 1.0f);
  // A uniformly random count-subset of the places {0, ..., count + nblank - 1}, largest first:
  // selection sampling (Knuth, TAOCP vol. 2, 3.4.2, Algorithm S) from the top, keeping place v
  // with probability needed / (v + 1) (exactly: k (v + 1) < needed 2^24, certain once
  // needed = v + 1).
  const int64_t* place = places.data();
  const float* draw = u.data();
  for (size_t b = 0; b < B; ++b, ++place) {
    int64_t needed = counts[b];
    for (int64_t v = *place - 1; v >= 0; --v, ++draw)
      if (needed > 0 && bits(*draw) * (v + 1) < (needed << 24)) {
        out[static_cast<size_t>(at++)] = static_cast<int32_t>(std::min(v, memory_size - 1));
        --needed;
      }
  }
}

// ---- construction ----------------------------------------------------------------------------

MemN2N::MemN2N(const MemN2NConfig& config, Rng& init) : config_(config) {
  config_.validate();
  const MemN2NConfig& c = config_;
  const int64_t V = c.vocab_size, E = c.embedding_size, Mm = c.memory_size;
  constexpr float kStd = 0.1f;   // N(0, 0.1²), the paper's initialisation
  auto draw = [&](const std::string& name, const Shape& shape) { return Param(name, randn(shape, init, kStd)); };
  const bool adjacent = c.tying == MemN2NTying::adjacent;
  std::vector<std::string> tables, times;
  if (adjacent) {
    // (Appending to a std::string rather than `"C" + std::to_string(k)`, which draws a false
    // -Wrestrict from GCC 12.)
    auto numbered = [](const char* prefix, int64_t k) { return std::string(prefix).append(std::to_string(k)); };
    tables.push_back("A1");
    times.push_back("T_A1");
    for (int64_t k = 1; k <= c.hops; ++k) {
      tables.push_back(numbered("C", k));
      times.push_back(numbered("T_C", k));
    }
  } else {
    question_ = draw("B", {V, E});
    tables = {"A", "C"};
    times = {"T_A", "T_C"};
  }
  for (const std::string& name : tables) memory_.push_back(draw(name, {V, E}));
  if (c.temporal)
    for (const std::string& name : times) temporal_.push_back(draw(name, {Mm, E}));
  if (!adjacent) {
    H_ = draw("H", {E, E});
    output_ = draw("W", {V, E});
  }
}

ParamList MemN2N::params() {
  ParamList list;
  if (question_.value.defined()) list.push_back(&question_);
  for (Param& p : memory_) list.push_back(&p);
  for (Param& p : temporal_) list.push_back(&p);
  if (H_.value.defined()) list.push_back(&H_);
  if (output_.value.defined()) list.push_back(&output_);
  return list;
}

// ---- forward ---------------------------------------------------------------------------------

Dims MemN2NImpl::dims(const MemN2N& m, const QaBatch& batch) {
  const MemN2NConfig& c = m.config_;
  Dims d;
  check_tensor(batch.story, {kAny, kAny, kAny}, "memnet: story [B, Ms, Ws]", DType::i32);
  d.B = batch.story.dim(0);
  d.Ms = batch.story.dim(1);
  d.Ws = batch.story.dim(2);
  if (d.B == 0) throw ShapeError("memnet: story [B, Ms, Ws] has B = 0 (an empty batch)");
  check_tensor(batch.story_len, {d.B}, "memnet: story_len [B]", DType::i32);
  check_tensor(batch.question, {d.B, kAny}, "memnet: question [B, Wq]", DType::i32);
  check_tensor(batch.answer, {d.B}, "memnet: answer [B]", DType::i32);
  d.Wq = batch.question.dim(1);
  d.V = c.vocab_size;
  d.E = c.embedding_size;
  d.K = c.hops;
  d.S = c.memory_tables();
  d.Mm = c.memory_size;
  d.position = c.encoding != MemN2NEncoding::bow;
  d.temporal = c.temporal;
  d.adjacent = c.tying == MemN2NTying::adjacent;

  // Every id is checked, so that no row of a table is read out of range.
  const int32_t* len = batch.story_len.idata();
  for (int64_t b = 0; b < d.B; ++b)
    if (len[b] < 0 || len[b] > d.Ms)
      throw DataError("memnet: story_len[" + std::to_string(b) + "] = " + std::to_string(len[b]) +
                      " is outside [0, Ms = " + std::to_string(d.Ms) + "]");
  const int32_t* story = batch.story.idata();
  for (int64_t x = 0; x < batch.story.numel(); ++x)
    if (story[x] < 0 || story[x] >= d.V) {
      const int64_t j = x % d.Ws, i = x / d.Ws % d.Ms, b = x / (d.Ws * d.Ms);
      throw DataError("memnet: story[" + std::to_string(b) + ", " + std::to_string(i) + ", " + std::to_string(j) +
                      "] = " + std::to_string(story[x]) + id_range(d.V));
    }
  const int32_t* q = batch.question.idata();
  for (int64_t x = 0; x < batch.question.numel(); ++x)
    if (q[x] < 0 || q[x] >= d.V)
      throw DataError("memnet: question[" + std::to_string(x / d.Wq) + ", " + std::to_string(x % d.Wq) +
                      "] = " + std::to_string(q[x]) + id_range(d.V));
  const int32_t* a = batch.answer.idata();
  for (int64_t b = 0; b < d.B; ++b)
    if (a[b] < 0 || a[b] >= d.V)
      throw DataError("memnet: answer[" + std::to_string(b) + "] = " + std::to_string(a[b]) + id_range(d.V));
  return d;
}

void MemN2NImpl::prepare(const MemN2N& m, const QaBatch& batch, Rng* noise, Run& run) {
  run.d = dims(m, batch);
  const Dims& d = run.d;
  const int64_t B = d.B, Ms = d.Ms, E = d.E;
  run.linear_start = m.linear_start_;
  run.n.assign(batch.story_len.idata(), batch.story_len.idata() + B);
  run.w0.resize(static_cast<size_t>(B));
  run.tix.assign(static_cast<size_t>(B * Ms), 0);
  run.slen.assign(static_cast<size_t>(B * Ms), 0);
  run.qlen.resize(static_cast<size_t>(B));
  run.cost.resize(static_cast<size_t>(B));
  const int32_t* story = batch.story.idata();
  // The windows' temporal indices, example after example. Random noise moves them only: without
  // temporal encoding nothing is drawn.
  std::vector<int32_t> count(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    run.w0[b] = static_cast<int32_t>(std::max<int64_t>(0, run.n[b] - d.Mm));
    count[b] = run.n[b] - run.w0[b];
  }
  std::vector<int32_t> times(static_cast<size_t>(std::accumulate(count.begin(), count.end(), int64_t{0})));
  memn2n_temporal_indices(count, d.Mm, d.temporal ? noise : nullptr, times);
  for (int64_t b = 0, at = 0; b < B; at += count[b], ++b)
    std::copy_n(times.begin() + at, count[b], run.tix.begin() + b * Ms + run.w0[b]);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = run.n[b], w0 = run.w0[b];
    int64_t words = 0;
    for (int64_t i = w0; i < n; ++i) {
      run.slen[b * Ms + i] = word_count(story + (b * Ms + i) * d.Ws, d.Ws);
      words += run.slen[b * Ms + i];
    }
    run.qlen[b] = word_count(batch.question.idata() + b * d.Wq, d.Wq);
    // Embedding every sentence with every table, and the hops over the window.
    run.cost[b] = (words + n - w0) * d.S + run.qlen[b] + 2 * d.K * (n - w0) + 1;
  }
  // l_kj, 1-based j and k, for sentences of J = 1 .. Wmax words: the paper's (1 - j/J) - (k/E)(1 -
  // 2j/J), or the code's 1 + 4 (k - (E+1)/2) (j - (Jf+1)/2) / (E Jf) with Jf = sentence_length.
  run.Wmax = std::max(d.Ws, d.Wq);
  if (d.position) {
    const bool fixed = m.config_.encoding == MemN2NEncoding::position_fixed;
    const double Jf = static_cast<double>(m.config_.sentence_length), dE = static_cast<double>(E);
    run.pe.assign(static_cast<size_t>((run.Wmax + 1) * run.Wmax * E), 0.0f);
    for (int64_t J = 1; J <= run.Wmax; ++J)
      for (int64_t j = 1; j <= J; ++j)
        for (int64_t k = 1; k <= E; ++k) {
          const double jJ = static_cast<double>(j) / static_cast<double>(J), dk = static_cast<double>(k);
          const double l = fixed ? 1.0 + 4.0 * (dk - (dE + 1) / 2) * (static_cast<double>(j) - (Jf + 1) / 2) / (dE * Jf)
                                 : (1.0 - jJ) - dk / dE * (1.0 - 2.0 * jJ);
          run.pe[static_cast<size_t>((J * run.Wmax + j - 1) * E + k - 1)] = static_cast<float>(l);
        }
  }
}

void MemN2NImpl::forward_row(const MemN2N& m, const QaBatch& batch, Run& run, int64_t b) {
  const Dims& d = run.d;
  const int64_t B = d.B, Ms = d.Ms, E = d.E, K = d.K, n = run.n[b], w0 = run.w0[b];
  const int32_t* story = batch.story.idata() + b * Ms * d.Ws;
  const EmbedFn embed = embed_kernel(E, d.position);
  const WeightedSumFn weighted = weighted_sum_kernel(E);
  // The sentences, embedded with every memory table (from their temporal rows).
  for (int64_t s = 0; s < d.S; ++s) {
    const float* X = m.memory_[s].value.data();
    const float* T = d.temporal ? m.temporal_[s].value.data() : nullptr;
    float* mem = run.Mem.data() + (s * B + b) * Ms * E;
    for (int64_t i = w0; i < n; ++i) {
      const int64_t J = run.slen[b * Ms + i];
      embed(X, E, story + i * d.Ws, J, run.pe_row(J), T ? T + static_cast<int64_t>(run.tix[b * Ms + i]) * E : nullptr,
            mem + i * E);
    }
  }
  // u^1: the question.
  const int64_t Jq = run.qlen[b];
  embed(question_table(m).value.data(), E, batch.question.idata() + b * d.Wq, Jq, run.pe_row(Jq), nullptr,
        run.U.data() + b * E);
  // The hops.
  const float* H = d.adjacent ? nullptr : m.H_.value.data();
  for (int64_t k = 0; k < K; ++k) {
    const float* u = run.U.data() + (k * B + b) * E;
    float* next = run.U.data() + ((k + 1) * B + b) * E;
    const float* mem = run.Mem.data() + (in_table(d, k) * B + b) * Ms * E;
    const float* out = run.Mem.data() + (out_table(d, k) * B + b) * Ms * E;
    float* p = run.P.data() + (b * K + k) * Ms;
    std::fill(p, p + Ms, 0.0f);
    for (int64_t i = w0; i < n; ++i) p[i] = dot(u, mem + i * E, E);
    if (!run.linear_start && n > w0) {   // softmax over the window (and the empty slots' zeros)
      const int64_t empties = std::max<int64_t>(0, m.config_.empty_slots - (n - w0));
      float mx = *std::max_element(p + w0, p + n);
      if (empties > 0) mx = std::max(mx, 0.0f);
      for (int64_t i = w0; i < n; ++i) p[i] = ops::exp_approx(p[i] - mx);
      float sum = empties > 0 ? static_cast<float>(empties) * ops::exp_approx(-mx) : 0.0f;
      for (int64_t i = w0; i < n; ++i) sum += p[i];
      const float inv = 1.0f / sum;
      for (int64_t i = w0; i < n; ++i) p[i] *= inv;
    }
    // u^{k+1} = u^k (adjacent) or H u^k (layerwise), + o = Σ p_i c_i.
    if (H == nullptr) {
      std::memcpy(next, u, static_cast<size_t>(E) * sizeof(float));
    } else {
      for (int64_t e = 0; e < E; ++e) next[e] = dot(H + e * E, u, E);
    }
    weighted(out + w0 * E, E, p + w0, n - w0, next);
  }
}

void MemN2NImpl::forward(const MemN2N& m, const QaBatch& batch, Run& run) {
  const Dims& d = run.d;
  const int64_t B = d.B, E = d.E, K = d.K;
  run.Mem = Tensor::uninitialized({d.S, B, d.Ms, E});
  run.U = Tensor::uninitialized({K + 1, B, E});
  run.P = Tensor::uninitialized({B, K, d.Ms});
  int64_t work = 0;
  for (int64_t c : run.cost) work += c;
  work *= E;
  flops::add(work + (d.adjacent ? 0 : B * K * E * E));
  flops::add_sequential_steps(K);   // the hops are a chain (core/flops.hpp)
  over_row_blocks(run.cost, threads_for(work), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) forward_row(m, batch, run, b);
  });
  // The answer logits a = W u^{K+1}: one GEMM over the batch.
  run.logits = Tensor::uninitialized({B, d.V});
  blas::gemm(Trans::N, Trans::T, B, d.V, E, 1.0f, run.U.data() + K * B * E, E, answer_table(m).value.data(), E, 0.0f,
             run.logits.data(), d.V);
}

MemN2NStats MemN2NImpl::loss(Run& run, const QaBatch& batch, int32_t* predictions, bool backward) {
  const int64_t B = run.d.B, V = run.d.V;
  const float inv_B = 1.0f / static_cast<float>(B);
  MemN2NStats s;
  s.questions = B;
  for (int64_t b = 0; b < B; ++b) {
    float* row = run.logits.data() + b * V;
    const int32_t target = batch.answer.idata()[b];
    const int64_t best = std::max_element(row, row + V) - row;   // the first maximum
    const float mx = row[best];
    double sum = 0.0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v] - mx));
    s.loss_nats += static_cast<double>(mx) + std::log(sum) - static_cast<double>(row[target]);
    s.correct += best == target;
    if (predictions != nullptr) predictions[b] = static_cast<int32_t>(best);
    if (backward) {   // dlogits = (softmax - onehot) / B
      const float inv_sum = static_cast<float>(1.0 / sum);
      for (int64_t v = 0; v < V; ++v) row[v] = std::exp(row[v] - mx) * inv_sum * inv_B;
      row[target] -= inv_B;
    }
  }
  return s;
}

// ---- backward --------------------------------------------------------------------------------

// Row b of every hop's backward: dU's block K (du^{K+1}) in, blocks K-1 .. 0 out; this row's
// window slots of dMem written (every table: each is reached by some hop), dP as scratch.
void MemN2NImpl::backward_row(const MemN2N& m, Run& run, Tensor& dU_, Tensor& dMem_, Tensor& dP_, int64_t b) {
  const Dims& d = run.d;
  const int64_t B = d.B, Ms = d.Ms, E = d.E, K = d.K, n = run.n[b], w0 = run.w0[b];
  float* dU = dU_.data();
  float* dMem = dMem_.data();
  float* dp = dP_.data() + b * Ms;
  const float* H = d.adjacent ? nullptr : m.H_.value.data();
  const WeightedSumFn weighted = weighted_sum_kernel(E);
  for (int64_t k = K - 1; k >= 0; --k) {
    const float* g = dU + ((k + 1) * B + b) * E;   // dloss / du^{k+1}
    float* du = dU + (k * B + b) * E;
    const float* u = run.U.data() + (k * B + b) * E;
    const float* mem = run.Mem.data() + (in_table(d, k) * B + b) * Ms * E;
    const float* out = run.Mem.data() + (out_table(d, k) * B + b) * Ms * E;
    float* dmem = dMem + (in_table(d, k) * B + b) * Ms * E;
    float* dout = dMem + (out_table(d, k) * B + b) * Ms * E;
    const float* p = run.P.data() + (b * K + k) * Ms;
    // The first hop (backward) to reach a table's slots writes their gradient, later ones add:
    // table out(k) first at the last hop; table in(k) at hop k (adjacent) or the last (layerwise).
    const bool first_out = k == K - 1, first_in = d.adjacent || k == K - 1;
    // o = Σ p_i c_i: dp_i = g · c_i, dc_i += p_i g.
    for (int64_t i = w0; i < n; ++i) {
      dp[i] = dot(g, out + i * E, E);
      if (first_out) scale(p[i], g, dout + i * E, E);
      else axpy(p[i], g, dout + i * E, E);
    }
    // p = softmax(scores): ds_i = p_i (dp_i - Σ_j p_j dp_j) (in place); linear start: ds = dp.
    // Empty slots (empty_slots) read nothing, so their dp is 0 and the sum is the window's.
    if (!run.linear_start) {
      float pdp = 0.0f;
      for (int64_t i = w0; i < n; ++i) pdp += p[i] * dp[i];
      for (int64_t i = w0; i < n; ++i) dp[i] = p[i] * (dp[i] - pdp);
    }
    // u^{k+1} = u^k + o (du = g) or H u^k + o (du = H^T g); scores_i = u^k · m_i.
    if (H == nullptr) {
      std::memcpy(du, g, static_cast<size_t>(E) * sizeof(float));
    } else {   // du = Σ_e g_e H[e]
      std::fill(du, du + E, 0.0f);
      weighted(H, E, g, E, du);
    }
    weighted(mem + w0 * E, E, dp + w0, n - w0, du);
    for (int64_t i = w0; i < n; ++i) {
      if (first_in) scale(dp[i], u, dmem + i * E, E);
      else axpy(dp[i], u, dmem + i * E, E);
    }
  }
}

void MemN2NImpl::scatter_tables(MemN2N& m, const QaBatch& batch, const Run& run, const Tensor& dU, const Tensor& dMem,
                                int64_t u0, int64_t u1) {
  const Dims& d = run.d;
  const int64_t B = d.B, Ms = d.Ms, E = d.E;
  const int32_t* story = batch.story.idata();
  const ScatterFn embed_backward = scatter_kernel(E, d.position);
  for (int64_t s = u0; s < std::min(u1, d.S); ++s) {
    float* dX = m.memory_[s].grad.data();
    float* dT = d.temporal ? m.temporal_[s].grad.data() : nullptr;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = run.w0[b]; i < run.n[b]; ++i) {
        const float* g = dMem.data() + ((s * B + b) * Ms + i) * E;
        const int64_t J = run.slen[b * Ms + i];
        embed_backward(dX, E, story + (b * Ms + i) * d.Ws, J, run.pe_row(J), g);
        if (dT != nullptr) axpy(1.0f, g, dT + static_cast<int64_t>(run.tix[b * Ms + i]) * E, E);
      }
  }
  // The question's table: A1 (unit 0) or B (unit S).
  if (u0 <= question_unit(d) && question_unit(d) < u1) {
    float* dQ = question_table(m).grad.data();
    for (int64_t b = 0; b < B; ++b) {
      const int64_t J = run.qlen[b];
      embed_backward(dQ, E, batch.question.idata() + b * d.Wq, J, run.pe_row(J), dU.data() + b * E);
    }
  }
}

void MemN2NImpl::backward(MemN2N& m, const QaBatch& batch, Run& run) {
  const Dims& d = run.d;
  const int64_t B = d.B, E = d.E, K = d.K, V = d.V;
  const float* dlogits = run.logits.data();
  Tensor dU = Tensor::uninitialized({K + 1, B, E});
  // The answer layer: du^{K+1} = dlogits W, dW += dlogits^T u^{K+1}.
  Param& W = answer_table(m);
  blas::gemm(Trans::N, Trans::N, B, E, V, 1.0f, dlogits, V, W.value.data(), E, 0.0f, dU.data() + K * B * E, E);
  blas::gemm(Trans::T, Trans::N, V, E, B, 1.0f, dlogits, V, run.U.data() + K * B * E, E, 1.0f, W.grad.data(), E);

  // The hops, last first, example by example.
  Tensor dMem = Tensor::uninitialized({d.S, B, d.Ms, E});
  Tensor dP = Tensor::uninitialized({B, d.Ms});
  int64_t work = 0;
  for (int64_t c : run.cost) work += c;
  work *= E;
  flops::add(work + (d.adjacent ? 0 : 2 * B * K * E * E));
  flops::add_sequential_steps(K);
  over_row_blocks(run.cost, threads_for(work), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) backward_row(m, run, dU, dMem, dP, b);
  });
  // Layerwise: dH += Σ_k du^{k+1} (u^k)^T, one GEMM over every hop's rows.
  if (!d.adjacent)
    blas::gemm(Trans::T, Trans::N, E, E, K * B, 1.0f, dU.data() + B * E, E, run.U.data(), E, 1.0f, m.H_.grad.data(),
               E);
  // The embedding tables' gradients, whole tables per thread (tables of about equal work): a
  // table row is written by one thread only, and every element in example order.
  std::vector<int64_t> unit_cost(static_cast<size_t>(units(d)), 0);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = run.w0[b]; i < run.n[b]; ++i)
      for (int64_t s = 0; s < d.S; ++s) unit_cost[s] += run.slen[b * d.Ms + i] + 1;
    unit_cost[question_unit(d)] += run.qlen[b];
  }
  over_row_blocks(unit_cost, threads_for(work),
                  [&](int64_t u0, int64_t u1) { scatter_tables(m, batch, run, dU, dMem, u0, u1); });
}

// ---- the public steps ------------------------------------------------------------------------

MemN2NStats MemN2N::train_step(const QaBatch& batch, Rng* noise) {
  Impl::Run run;
  Impl::prepare(*this, batch, noise, run);
  Impl::forward(*this, batch, run);
  const MemN2NStats stats = Impl::loss(run, batch, nullptr, /*backward=*/true);
  Impl::backward(*this, batch, run);
  return stats;
}

MemN2NResult MemN2N::evaluate(const QaBatch& batch) const {
  MemN2NResult r = answer(batch);
  r.attention = Tensor();   // evaluation returns the answers and their sums only
  return r;
}

MemN2NResult MemN2N::answer(const QaBatch& batch) const {
  Impl::Run run;
  Impl::prepare(*this, batch, nullptr, run);
  Impl::forward(*this, batch, run);
  MemN2NResult r;
  r.predictions = Tensor({run.d.B}, DType::i32);
  r.stats = Impl::loss(run, batch, r.predictions.idata(), /*backward=*/false);
  r.attention = run.P;
  return r;
}

}  // namespace attn::memnet

// Embedding bags: the row kernels (GCC vector extensions, instantiated per count of 4-float
// blocks), the checked forward and backward over T tables, and the one-bag row sums.
#include "attn/ops/embedding_bag.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "attn/core/flops.hpp"
#include "attn/core/row_blocks.hpp"
#include "attn/core/threading.hpp"

namespace attn::ops {
namespace {

// Four floats as one SIMD register (a GCC/Clang vector extension: SSE on x86-64, NEON on ARM).
// E is small in the models that use bags (20, 50), so loops over it written for the
// auto-vectoriser spend most of their time in the prologue and epilogue that a runtime trip count
// needs; blocks of four with a scalar tail do not. Loads and stores go through memcpy: rows need
// not be 16-byte aligned.
typedef float f4 __attribute__((vector_size(16)));
inline f4 load4(const float* p) {
  f4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(float* p, f4 v) { std::memcpy(p, &v, sizeof v); }
inline f4 splat4(float x) { return f4{x, x, x, x}; }

// a · b over n floats: four partial sums, then the tail.
inline float dot(const float* a, const float* b, int64_t n) {
  const int64_t n4 = n & ~int64_t{3};
  f4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n4; i += 4) acc += load4(a + i) * load4(b + i);
  float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (int64_t i = n4; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// a · (l ∘ b) over n floats, the same way.
inline float dot3(const float* a, const float* l, const float* b, int64_t n) {
  const int64_t n4 = n & ~int64_t{3};
  f4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n4; i += 4) acc += load4(a + i) * (load4(l + i) * load4(b + i));
  float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (int64_t i = n4; i < n; ++i) sum += a[i] * (l[i] * b[i]);
  return sum;
}

// y = alpha x over n floats.
inline void scale(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

// y += x over n floats (blocks of 4 and a tail: no vectoriser prologue for a 20-float row).
inline void add_rows(const float* x, float* y, int64_t n) {
  const int64_t n4 = n & ~int64_t{3};
  for (int64_t i = 0; i < n4; i += 4) store4(y + i, load4(y + i) + load4(x + i));
  for (int64_t i = n4; i < n; ++i) y[i] += x[i];
}

// y += alpha x over n floats.
inline void axpy(float alpha, const float* x, float* y, int64_t n) {
  const int64_t n4 = n & ~int64_t{3};
  const f4 a = splat4(alpha);
  for (int64_t i = 0; i < n4; i += 4) store4(y + i, load4(y + i) + a * load4(x + i));
  for (int64_t i = n4; i < n; ++i) y[i] += alpha * x[i];
}

// Kernels that sum rows of E floats. When the number of 4-float blocks NB = E / 4 is known at
// compile time, the sum of every block (and of the tail of E % 4) stays in registers across the
// rows; a sum kept in memory is stored and reloaded for every row it adds, a chain of
// store-to-load latencies that made these loops twice as slow. Each kernel is instantiated for
// NB = 0 .. kFixedBlocks - 1 (E < 68) and chosen once per call from a table; NB = -1 is the
// block-by-block version for wider rows. Either way every element is summed in row order, by
// the same operations (no FMA contraction in the baseline x86-64 build these are compiled for).
constexpr int kFixedBlocks = 17;

// out = init + Σ_{j<J} w_j l_j ∘ X[ids_j]: one bag (init: its start row, or null for 0; l: the
// position weights' J rows for a J-id bag, w: its sample weights, each only when kPosition,
// kSample).
template <int NB, bool kPosition, bool kSample>
void bag_sum(const float* X, int64_t E, const int32_t* ids, int64_t J, const float* l, const float* w,
             const float* init, float* out) {
  if constexpr (NB >= 0) {
    f4 acc[NB > 0 ? NB : 1];
    float tail[3] = {0.0f, 0.0f, 0.0f};
    const int64_t rest = E - 4 * NB;
#pragma GCC unroll 16
    for (int q = 0; q < NB; ++q) acc[q] = init ? load4(init + 4 * q) : f4{0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t t = 0; t < rest; ++t) tail[t] = init ? init[4 * NB + t] : 0.0f;
    for (int64_t j = 0; j < J; ++j) {
      const float* x = X + static_cast<int64_t>(ids[j]) * E;
      const float* lj = kPosition ? l + j * E : nullptr;
      const f4 wj = splat4(kSample ? w[j] : 1.0f);
#pragma GCC unroll 16
      for (int q = 0; q < NB; ++q) {
        if constexpr (kPosition && kSample)
          acc[q] += wj * (load4(lj + 4 * q) * load4(x + 4 * q));
        else if constexpr (kPosition)
          acc[q] += load4(lj + 4 * q) * load4(x + 4 * q);
        else if constexpr (kSample)
          acc[q] += wj * load4(x + 4 * q);
        else
          acc[q] += load4(x + 4 * q);
      }
      for (int64_t t = 0; t < rest; ++t) {
        const int64_t c = 4 * NB + t;
        if constexpr (kPosition && kSample)
          tail[t] += w[j] * (lj[c] * x[c]);
        else if constexpr (kPosition)
          tail[t] += lj[c] * x[c];
        else if constexpr (kSample)
          tail[t] += w[j] * x[c];
        else
          tail[t] += x[c];
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
        const f4 x = load4(X + static_cast<int64_t>(ids[j]) * E + c);
        if constexpr (kPosition && kSample)
          acc += splat4(w[j]) * (load4(l + j * E + c) * x);
        else if constexpr (kPosition)
          acc += load4(l + j * E + c) * x;
        else if constexpr (kSample)
          acc += splat4(w[j]) * x;
        else
          acc += x;
      }
      store4(out + c, acc);
    }
    for (int64_t c = E4; c < E; ++c)
      for (int64_t j = 0; j < J; ++j) {
        const float x = X[static_cast<int64_t>(ids[j]) * E + c];
        if constexpr (kPosition && kSample)
          out[c] += w[j] * (l[j * E + c] * x);
        else if constexpr (kPosition)
          out[c] += l[j * E + c] * x;
        else if constexpr (kSample)
          out[c] += w[j] * x;
        else
          out[c] += x;
      }
  }
}

// The backward of bag_sum: dX[ids_j] += w_j l_j ∘ g, id by id (g held in registers), over the
// columns [c0, c1) (c0 a multiple of 4; the fixed kernels always take the whole row).
template <int NB, bool kPosition, bool kSample>
void bag_scatter(float* dX, int64_t E, const int32_t* ids, int64_t J, const float* l, const float* w, const float* g,
                 int64_t c0, int64_t c1) {
  if constexpr (NB >= 0) {
    f4 gq[NB > 0 ? NB : 1];
#pragma GCC unroll 16
    for (int q = 0; q < NB; ++q) gq[q] = load4(g + 4 * q);
    const int64_t rest = E - 4 * NB;
    for (int64_t j = 0; j < J; ++j) {
      float* dx = dX + static_cast<int64_t>(ids[j]) * E;
      const float* lj = kPosition ? l + j * E : nullptr;
      const f4 wj = splat4(kSample ? w[j] : 1.0f);
#pragma GCC unroll 16
      for (int q = 0; q < NB; ++q) {
        if constexpr (kPosition && kSample)
          store4(dx + 4 * q, load4(dx + 4 * q) + wj * (load4(lj + 4 * q) * gq[q]));
        else if constexpr (kPosition)
          store4(dx + 4 * q, load4(dx + 4 * q) + load4(lj + 4 * q) * gq[q]);
        else if constexpr (kSample)
          store4(dx + 4 * q, load4(dx + 4 * q) + wj * gq[q]);
        else
          store4(dx + 4 * q, load4(dx + 4 * q) + gq[q]);
      }
      for (int64_t t = 4 * NB; t < 4 * NB + rest; ++t) {
        if constexpr (kPosition && kSample)
          dx[t] += w[j] * (lj[t] * g[t]);
        else if constexpr (kPosition)
          dx[t] += lj[t] * g[t];
        else if constexpr (kSample)
          dx[t] += w[j] * g[t];
        else
          dx[t] += g[t];
      }
    }
  } else {
    const int64_t c4 = c0 + ((c1 - c0) & ~int64_t{3});
    for (int64_t j = 0; j < J; ++j) {
      float* dx = dX + static_cast<int64_t>(ids[j]) * E;
      const float* lj = kPosition ? l + j * E : nullptr;
      for (int64_t c = c0; c < c4; c += 4) {
        if constexpr (kPosition && kSample)
          store4(dx + c, load4(dx + c) + splat4(w[j]) * (load4(lj + c) * load4(g + c)));
        else if constexpr (kPosition)
          store4(dx + c, load4(dx + c) + load4(lj + c) * load4(g + c));
        else if constexpr (kSample)
          store4(dx + c, load4(dx + c) + splat4(w[j]) * load4(g + c));
        else
          store4(dx + c, load4(dx + c) + load4(g + c));
      }
      for (int64_t c = c4; c < c1; ++c) {
        if constexpr (kPosition && kSample)
          dx[c] += w[j] * (lj[c] * g[c]);
        else if constexpr (kPosition)
          dx[c] += lj[c] * g[c];
        else if constexpr (kSample)
          dx[c] += w[j] * g[c];
        else
          dx[c] += g[c];
      }
    }
  }
}

// out += Σ_{i<n} w_i R_i over the rows R_i = R + i E.
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
      const f4 wi = splat4(w[i]);
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
      for (int64_t i = 0; i < n; ++i) acc += splat4(w[i]) * load4(R + i * E + c);
      store4(out + c, acc);
    }
    for (int64_t c = E4; c < E; ++c)
      for (int64_t i = 0; i < n; ++i) out[c] += w[i] * R[i * E + c];
  }
}

// The backward of weighted_sum from g = dout: dw_i = g · R_i (when kDot; four partial sums, then
// the tail, as dot() below), dR_i = w_i g, or += w_i g when kAccumulate (g held in registers).
template <int NB, bool kDot, bool kAccumulate>
void weighted_sum_backward(const float* R, int64_t E, const float* w, int64_t n, const float* g, float* dw, float* dR) {
  if constexpr (NB >= 0) {
    f4 gq[NB > 0 ? NB : 1];
#pragma GCC unroll 16
    for (int q = 0; q < NB; ++q) gq[q] = load4(g + 4 * q);
    const int64_t rest = E - 4 * NB;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (kDot) {
        const float* r = R + i * E;
        f4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma GCC unroll 16
        for (int q = 0; q < NB; ++q) acc += gq[q] * load4(r + 4 * q);
        float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for (int64_t t = 4 * NB; t < 4 * NB + rest; ++t) sum += g[t] * r[t];
        dw[i] = sum;
      }
      float* d = dR + i * E;
      const f4 wi = splat4(w[i]);
#pragma GCC unroll 16
      for (int q = 0; q < NB; ++q) {
        if constexpr (kAccumulate)
          store4(d + 4 * q, load4(d + 4 * q) + wi * gq[q]);
        else
          store4(d + 4 * q, wi * gq[q]);
      }
      for (int64_t t = 4 * NB; t < 4 * NB + rest; ++t) {
        if constexpr (kAccumulate)
          d[t] += w[i] * g[t];
        else
          d[t] = w[i] * g[t];
      }
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (kDot) dw[i] = dot(g, R + i * E, E);
      if constexpr (kAccumulate)
        axpy(w[i], g, dR + i * E, E);
      else
        scale(w[i], g, dR + i * E, E);
    }
  }
}

using BagSumFn = void (*)(const float*, int64_t, const int32_t*, int64_t, const float*, const float*, const float*,
                          float*);
using BagScatterFn = void (*)(float*, int64_t, const int32_t*, int64_t, const float*, const float*, const float*,
                              int64_t, int64_t);
using WeightedSumFn = void (*)(const float*, int64_t, const float*, int64_t, float*);
using WeightedSumBackwardFn = void (*)(const float*, int64_t, const float*, int64_t, const float*, float*, float*);

template <bool kPosition, bool kSample, int... NB>
constexpr std::array<BagSumFn, sizeof...(NB)> sum_table(std::integer_sequence<int, NB...>) {
  return {&bag_sum<NB, kPosition, kSample>...};
}
template <bool kPosition, bool kSample, int... NB>
constexpr std::array<BagScatterFn, sizeof...(NB)> scatter_table(std::integer_sequence<int, NB...>) {
  return {&bag_scatter<NB, kPosition, kSample>...};
}
template <int... NB>
constexpr std::array<WeightedSumFn, sizeof...(NB)> weighted_sum_table(std::integer_sequence<int, NB...>) {
  return {&weighted_sum<NB>...};
}

template <bool kDot, bool kAccumulate, int... NB>
constexpr std::array<WeightedSumBackwardFn, sizeof...(NB)> weighted_sum_backward_table(
    std::integer_sequence<int, NB...>) {
  return {&weighted_sum_backward<NB, kDot, kAccumulate>...};
}

template <bool kPosition, bool kSample>
BagSumFn sum_kernel(int64_t E) {
  static constexpr auto table = sum_table<kPosition, kSample>(std::make_integer_sequence<int, kFixedBlocks>{});
  if (E / 4 >= kFixedBlocks) return &bag_sum<-1, kPosition, kSample>;
  return table[static_cast<size_t>(E / 4)];
}
template <bool kPosition, bool kSample>
BagScatterFn scatter_kernel(int64_t E) {
  static constexpr auto table = scatter_table<kPosition, kSample>(std::make_integer_sequence<int, kFixedBlocks>{});
  if (E / 4 >= kFixedBlocks) return &bag_scatter<-1, kPosition, kSample>;
  return table[static_cast<size_t>(E / 4)];
}

// The kernels for rows of E floats with or without each kind of weight.
BagSumFn sum_kernel(int64_t E, bool position, bool sample) {
  if (position) return sample ? sum_kernel<true, true>(E) : sum_kernel<true, false>(E);
  return sample ? sum_kernel<false, true>(E) : sum_kernel<false, false>(E);
}
BagScatterFn scatter_kernel(int64_t E, bool position, bool sample) {
  if (position) return sample ? scatter_kernel<true, true>(E) : scatter_kernel<true, false>(E);
  return sample ? scatter_kernel<false, true>(E) : scatter_kernel<false, false>(E);
}
WeightedSumFn weighted_sum_kernel(int64_t E) {
  static constexpr auto table = weighted_sum_table(std::make_integer_sequence<int, kFixedBlocks>{});
  if (E / 4 >= kFixedBlocks) return &weighted_sum<-1>;
  return table[static_cast<size_t>(E / 4)];
}

template <bool kDot, bool kAccumulate>
WeightedSumBackwardFn weighted_sum_backward_kernel(int64_t E) {
  static constexpr auto table = weighted_sum_backward_table<kDot, kAccumulate>(
      std::make_integer_sequence<int, kFixedBlocks>{});
  if (E / 4 >= kFixedBlocks) return &weighted_sum_backward<-1, kDot, kAccumulate>;
  return table[static_cast<size_t>(E / 4)];
}

// "[1, 3]": the multi-index of flat position i in shape.
std::string multi_index(int64_t i, const Shape& shape) {
  Shape idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    if (shape[d]) i /= shape[d];
  }
  return to_string(idx);
}

// Every entry of `ids` in [0, n) (n <= 2^31), named `what` in the message with n as `symbol`:
// one pass of integer ORs that vectorises (an id i in range has neither i nor n - 1 - i
// negative; as uint32 neither has its top bit), the message built only on failure.
void check_range(const Tensor& ids, int64_t n, const char* what, const char* symbol) {
  const int32_t* p = ids.idata();
  const int64_t count = ids.numel();
  const auto last = static_cast<uint32_t>(std::min<int64_t>(n, int64_t{1} << 31) - 1);
  uint32_t bits = 0;
  for (int64_t i = 0; i < count; ++i) bits |= static_cast<uint32_t>(p[i]) | (last - static_cast<uint32_t>(p[i]));
  if ((bits >> 31) == 0) return;
  const int64_t at = std::find_if(p, p + count, [&](int32_t v) { return v < 0 || v >= n; }) - p;
  throw DataError(std::string("embedding_bag: ") + what + " " + std::to_string(p[at]) + " at position " +
                  multi_index(at, ids.shape()) + " of " + what + "s " + to_string(ids.shape()) +
                  " is out of range [0, " + symbol + " = " + std::to_string(n) + ")");
}

// check_tensor, with its label (a string, or a callable making one) and the wanted shape built
// only when the check fails: the op runs a few times in every training step of a model as small
// as the memory network, where those allocations showed.
template <class Label>
void check(const Tensor& t, std::initializer_list<int64_t> want, const Label& label, DType dtype = DType::f32) {
  bool ok = t.dtype() == dtype && t.rank() == static_cast<int>(want.size());
  for (size_t d = 0; ok && d < want.size(); ++d) {
    const int64_t w = want.begin()[d];
    ok = w == kAny || w == t.dim(static_cast<int>(d));
  }
  if (ok) return;
  if constexpr (std::is_invocable_v<const Label&>)
    check_tensor(t, Shape(want), label(), dtype);
  else
    check_tensor(t, Shape(want), label, dtype);
}

// "embedding_bag: tables[1] [V, E]": the label of one table of a list.
std::string table_label(const char* op, const char* name, size_t t, const char* dims) {
  return std::string(op) + ": " + name + "[" + std::to_string(t) + "] " + dims;
}

// A call's bags as the loops read them.
struct BagView {
  const int32_t* ids = nullptr;   // [N, W]
  const int32_t* len = nullptr;   // [N]: J
  const float* pw = nullptr;      // position weights: row (J, j) at (J L + j) E
  const float* sw = nullptr;      // sample weights [N, W]
  const int32_t* sid = nullptr;   // start ids [N]
  int64_t W = 0, E = 0, L = 0;
};

// One table's bags present[k0, k1) (rows of ids, absent ones left out), every option known at
// compile time: on 20-float rows a kernel call is short enough for per-bag branches to show.
template <bool kPosition, bool kSample, bool kStart>
void sum_bags(const BagView& v, BagSumFn kernel, const float* X, const float* S, const int32_t* present, int64_t k0,
              int64_t k1, float* y) {
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t n = present[k], J = v.len[n];
    kernel(X, v.E, v.ids + n * v.W, J, kPosition ? v.pw + J * v.L * v.E : nullptr, kSample ? v.sw + n * v.W : nullptr,
           kStart ? S + static_cast<int64_t>(v.sid[n]) * v.E : nullptr, y + n * v.E);
  }
}

// The backward of sum_bags over columns [c0, c1) of one table (and of its start table).
template <bool kPosition, bool kSample, bool kStart>
void scatter_bags(const BagView& v, BagScatterFn kernel, float* dX, float* dS, const int32_t* present, int64_t count,
                  const float* g, int64_t c0, int64_t c1) {
  for (int64_t k = 0; k < count; ++k) {
    const int64_t n = present[k], J = v.len[n];
    const float* gn = g + n * v.E;
    kernel(dX, v.E, v.ids + n * v.W, J, kPosition ? v.pw + J * v.L * v.E : nullptr, kSample ? v.sw + n * v.W : nullptr,
           gn, c0, c1);
    if constexpr (kStart) add_rows(gn + c0, dS + static_cast<int64_t>(v.sid[n]) * v.E + c0, c1 - c0);
  }
}

using SumBagsFn = void (*)(const BagView&, BagSumFn, const float*, const float*, const int32_t*, int64_t, int64_t,
                           float*);
using ScatterBagsFn = void (*)(const BagView&, BagScatterFn, float*, float*, const int32_t*, int64_t, const float*,
                               int64_t, int64_t);

template <int... F>
constexpr std::array<SumBagsFn, sizeof...(F)> sum_bags_table(std::integer_sequence<int, F...>) {
  return {&sum_bags<(F & 4) != 0, (F & 2) != 0, (F & 1) != 0>...};
}
template <int... F>
constexpr std::array<ScatterBagsFn, sizeof...(F)> scatter_bags_table(std::integer_sequence<int, F...>) {
  return {&scatter_bags<(F & 4) != 0, (F & 2) != 0, (F & 1) != 0>...};
}
constexpr size_t flags(bool position, bool sample, bool start) {
  return (position ? 4u : 0u) | (sample ? 2u : 0u) | (start ? 1u : 0u);
}
SumBagsFn sum_bags_fn(bool position, bool sample, bool start) {
  static constexpr auto table = sum_bags_table(std::make_integer_sequence<int, 8>{});
  return table[flags(position, sample, start)];
}
ScatterBagsFn scatter_bags_fn(bool position, bool sample, bool start) {
  static constexpr auto table = scatter_bags_table(std::make_integer_sequence<int, 8>{});
  return table[flags(position, sample, start)];
}

// The leading dimensions of ids [..., W] (the bags' layout) and the shapes built on them, checked
// without allocating unless the check fails.
constexpr int64_t kNone = -2;   // no dimension before or after the leading ones
struct Lead {
  const Shape& ids;   // [..., W]
  int64_t bags = 1;   // N: the product of the leading dimensions

  explicit Lead(const Tensor& t) : ids(t.shape()) {
    for (size_t d = 0; d + 1 < ids.size(); ++d) bags *= ids[d];
  }
  size_t rank() const { return ids.size() - 1; }
  // [front, ..., back] (front, back: kNone for no dimension).
  Shape shape(int64_t front = kNone, int64_t back = kNone) const {
    Shape s;
    if (front != kNone) s.push_back(front);
    s.insert(s.end(), ids.begin(), ids.end() - 1);
    if (back != kNone) s.push_back(back);
    return s;
  }
  void check(const Tensor& t, int64_t front, int64_t back, const char* label, DType dtype = DType::f32) const {
    const size_t extra = (front != kNone ? 1 : 0) + (back != kNone ? 1 : 0);
    bool ok = t.dtype() == dtype && static_cast<size_t>(t.rank()) == rank() + extra;
    const size_t skip = front != kNone ? 1 : 0;
    if (ok && front != kNone) ok = t.dim(0) == front;
    for (size_t d = 0; ok && d < rank(); ++d) ok = t.shape()[d + skip] == ids[d];
    if (ok && back != kNone) ok = t.dim(-1) == back;
    if (!ok) check_tensor(t, shape(front, back), label, dtype);
  }
};

// Multiply-adds of a call: the ids of every present bag (and its start row), over every table.
int64_t bag_work(int64_t ids, int64_t present, bool start, int64_t T, int64_t E) {
  return (ids + (start ? present : 0)) * T * E;
}

// The present bags' share of the work, for row blocks of them.
std::vector<int64_t> bag_costs(const int32_t* present, int64_t count, const int32_t* len) {
  std::vector<int64_t> cost(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) cost[static_cast<size_t>(k)] = len[present[k]] + 1;
  return cost;
}

int parts_for(int64_t work) { return work >= kEmbeddingBagParallelMinWork && !in_parallel_region() ? num_parts() : 1; }

// A prepared call's bags as the loops read them (start: with start tables).
BagView bag_view(const EmbeddingBagCache& cache, bool start) {
  const EmbeddingBagOptions& o = cache.options;
  BagView v;
  v.ids = cache.ids.idata();
  v.len = cache.lengths().idata();
  v.pw = o.position_weights.defined() ? o.position_weights.data() : nullptr;
  v.sw = o.sample_weights.defined() ? o.sample_weights.data() : nullptr;
  v.sid = start ? o.start_ids.idata() : nullptr;
  v.W = cache.ids.dim(-1);
  v.E = cache.E;
  v.L = o.position_weights.defined() ? o.position_weights.dim(1) : 0;
  return v;
}

// The present bags present[k0, k1) of a prepared call, every table, on the calling thread.
void sum_present(const EmbeddingBagCache& cache, std::span<const Tensor* const> tables,
                 std::span<const Tensor* const> start_tables, int64_t k0, int64_t k1, Tensor& y) {
  const bool start = !start_tables.empty();
  const BagView v = bag_view(cache, start);
  const int64_t N = Lead(cache.ids).bags;
  const BagSumFn kernel = sum_kernel(v.E, v.pw != nullptr, v.sw != nullptr);
  const SumBagsFn loop = sum_bags_fn(v.pw != nullptr, v.sw != nullptr, start);
  for (size_t t = 0; t < tables.size(); ++t)
    loop(v, kernel, tables[t]->data(), start ? start_tables[t]->data() : nullptr, cache.present.data(), k0, k1,
         y.data() + static_cast<int64_t>(t) * N * v.E);
}

}  // namespace

Tensor embedding_bag_prepare(const Tensor& ids, std::span<const Tensor* const> tables,
                             std::span<const Tensor* const> start_tables, const EmbeddingBagOptions& options,
                             EmbeddingBagCache& cache) {
  if (ids.dtype() != DType::i32 || ids.rank() < 2)
    check_tensor(ids, {kAny, kAny}, "embedding_bag: ids [..., W]", DType::i32);
  const Lead lead(ids);
  const int64_t N = lead.bags, W = ids.dim(-1), T = static_cast<int64_t>(tables.size());
  if (T == 0) throw ShapeError("embedding_bag: no tables (tables holds T >= 1 tables [V, E])");
  check(*tables[0], {kAny, kAny}, "embedding_bag: tables[0] [V, E]");
  const int64_t V = tables[0]->dim(0), E = tables[0]->dim(1);
  for (size_t t = 1; t < tables.size(); ++t)
    check(*tables[t], {V, E}, [&] { return table_label("embedding_bag", "tables", t, "[V, E]"); });
  const bool start = !start_tables.empty();
  int64_t R = 0;
  if (start) {
    if (static_cast<int64_t>(start_tables.size()) != T)
      throw ShapeError("embedding_bag: " + std::to_string(start_tables.size()) + " start tables for " +
                       std::to_string(T) + " tables (give one per table, or none)");
    check(*start_tables[0], {kAny, E}, "embedding_bag: start_tables[0] [R, E]");
    R = start_tables[0]->dim(0);
    for (size_t t = 1; t < start_tables.size(); ++t)
      check(*start_tables[t], {R, E}, [&] { return table_label("embedding_bag", "start_tables", t, "[R, E]"); });
    if (!options.start_ids.defined())
      throw ShapeError("embedding_bag: start tables without start_ids [...] (the row each bag starts from)");
    lead.check(options.start_ids, kNone, kNone, "embedding_bag: start_ids [...]", DType::i32);
    check_range(options.start_ids, R, "start id", "R");
  } else if (options.start_ids.defined()) {
    throw ShapeError("embedding_bag: start_ids without start tables");
  }
  const bool position = options.position_weights.defined(), sample = options.sample_weights.defined();
  int64_t L = 0;
  if (position) {
    check(options.position_weights, {kAny, kAny, E}, "embedding_bag: position_weights [L + 1, L, E]");
    L = options.position_weights.dim(1);
    if (options.position_weights.dim(0) != L + 1 || L < W)
      throw ShapeError("embedding_bag: position_weights [L + 1, L, E] has shape " +
                       to_string(options.position_weights.shape()) + ", expected [L + 1, L, " + std::to_string(E) +
                       "] with L >= W = " + std::to_string(W));
  }
  if (sample) lead.check(options.sample_weights, kNone, W, "embedding_bag: sample_weights [..., W]");
  check_range(ids, V, "id", "V");

  // Every bag's length J (-1: absent): the options', or counted.
  std::optional<Tensor>& counted = cache.counted;
  counted.reset();
  if (options.lengths.defined()) {
    if (options.padding_id != kNoPadding)
      throw ConfigError("embedding_bag: lengths and a padding id (" + std::to_string(options.padding_id) +
                        ") both say where bags end: give one of them");
    lead.check(options.lengths, kNone, kNone, "embedding_bag: lengths [...]", DType::i32);
    const int32_t* len = options.lengths.idata();
    for (int64_t n = 0; n < N; ++n)
      if (len[n] < -1 || len[n] > W)
        throw DataError("embedding_bag: length " + std::to_string(len[n]) + " at position " +
                        multi_index(n, options.lengths.shape()) + " of lengths " + to_string(options.lengths.shape()) +
                        " is outside [-1, W = " + std::to_string(W) + "] (-1: an absent bag)");
  } else {
    counted = Tensor::uninitialized(lead.shape(), DType::i32);
    const int32_t* p = ids.idata();
    int32_t* len = counted->idata();
    for (int64_t n = 0; n < N; ++n) {
      int32_t J = 0;
      while (J < W && p[n * W + J] != options.padding_id) ++J;
      len[n] = J;
    }
  }

  const Tensor& lengths = counted ? *counted : options.lengths;

  // The present bags, in order (branch-free: an absent one is overwritten by the next).
  const int32_t* len = lengths.idata();
  std::vector<int32_t>& present = cache.present;
  present.resize(static_cast<size_t>(N));
  int32_t* pp = present.data();
  int64_t count = 0, in_bags = 0;
  for (int64_t n = 0; n < N; ++n) {
    pp[count] = static_cast<int32_t>(n);
    count += len[n] >= 0;
    in_bags += std::max(len[n], 0);
  }
  present.resize(static_cast<size_t>(count));

  cache.ids = ids;
  if (&cache.options != &options) cache.options = options;
  cache.tables.clear();
  if (sample)
    for (const Tensor* table : tables) cache.tables.push_back(*table);
  cache.T = T;
  cache.V = V;
  cache.E = E;
  cache.start_rows = R;
  cache.ids_in_bags = in_bags;
  flops::add(bag_work(in_bags, count, start, T, E));
  return Tensor::uninitialized(lead.shape(T, E));   // every present bag's rows written by embedding_bag_sum
}

void embedding_bag_sum(const EmbeddingBagCache& cache, std::span<const Tensor* const> tables,
                       std::span<const Tensor* const> start_tables, int64_t n0, int64_t n1, Tensor& y) {
  const std::vector<int32_t>& present = cache.present;
  const auto k0 = std::lower_bound(present.begin(), present.end(), n0) - present.begin();
  const auto k1 = std::lower_bound(present.begin(), present.end(), n1) - present.begin();
  sum_present(cache, tables, start_tables, k0, k1, y);
}

Tensor embedding_bag_forward(const Tensor& ids, std::span<const Tensor* const> tables,
                             std::span<const Tensor* const> start_tables, const EmbeddingBagOptions& options,
                             EmbeddingBagCache* cache) {
  EmbeddingBagCache local;
  EmbeddingBagCache& c = cache ? *cache : local;
  Tensor y = embedding_bag_prepare(ids, tables, start_tables, options, c);
  const int64_t count = static_cast<int64_t>(c.present.size());
  const int parts = parts_for(bag_work(c.ids_in_bags, count, !start_tables.empty(), c.T, c.E));
  if (parts <= 1)
    sum_present(c, tables, start_tables, 0, count, y);
  else
    over_row_blocks(bag_costs(c.present.data(), count, c.lengths().idata()), parts,
                    [&](int64_t k0, int64_t k1) { sum_present(c, tables, start_tables, k0, k1, y); });
  return y;
}

Tensor embedding_bag_backward(const Tensor& dy, const EmbeddingBagCache& cache, std::span<Tensor* const> dtables,
                              std::span<Tensor* const> dstart_tables) {
  const Tensor& ids = cache.ids;
  if (ids.dtype() != DType::i32 || ids.rank() < 2)
    check_tensor(ids, {kAny, kAny}, "embedding_bag_backward: cached ids [..., W]", DType::i32);
  const Lead lead(ids);
  const int64_t N = lead.bags, W = ids.dim(-1), T = cache.T, V = cache.V, E = cache.E, R = cache.start_rows;
  if (T == 0) throw ShapeError("embedding_bag_backward: the cache holds no tables (pass it to the forward first)");
  lead.check(dy, T, E, "embedding_bag_backward: dy [T, ..., E]");
  if (static_cast<int64_t>(dtables.size()) != T)
    throw ShapeError("embedding_bag_backward: " + std::to_string(dtables.size()) + " table gradients for " +
                     std::to_string(T) + " tables");
  for (size_t t = 0; t < dtables.size(); ++t)
    check(*dtables[t], {V, E}, [&] { return table_label("embedding_bag_backward", "dtables", t, "[V, E]"); });
  const bool start = R > 0 && !dstart_tables.empty();
  if (!dstart_tables.empty()) {
    if (R == 0 || static_cast<int64_t>(dstart_tables.size()) != T)
      throw ShapeError("embedding_bag_backward: " + std::to_string(dstart_tables.size()) +
                       " start table gradients for " + std::to_string(R == 0 ? 0 : T) + " start tables");
    for (size_t t = 0; t < dstart_tables.size(); ++t)
      check(*dstart_tables[t], {R, E},
            [&] { return table_label("embedding_bag_backward", "dstart_tables", t, "[R, E]"); });
  }
  check_range(ids, V, "id", "V");   // ids may have changed in place
  const EmbeddingBagOptions& o = cache.options;
  if (start) check_range(o.start_ids, R, "start id", "R");

  const bool position = o.position_weights.defined(), sample = o.sample_weights.defined();
  const BagView v = bag_view(cache, start);
  const int32_t* pp = cache.present.data();
  const int64_t count = static_cast<int64_t>(cache.present.size());
  const float* pdy = dy.data();
  const int64_t work = bag_work(cache.ids_in_bags, count, start, T, E);

  // The tables' gradients: units of whole tables, or from E = 128 of 64-column blocks of them
  // (whole 256-byte spans, so that no two threads write one cache line), every unit walking all
  // bags in order.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = E >= 2 * kBlock ? (E + kBlock - 1) / kBlock : 1;
  const BagScatterFn kernel = scatter_kernel(E, position, sample);
  const ScatterBagsFn loop = scatter_bags_fn(position, sample, start);
  auto units = [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t t = u / blocks, c0 = blocks == 1 ? 0 : u % blocks * kBlock;
      const int64_t c1 = blocks == 1 ? E : std::min(E, c0 + kBlock);
      loop(v, kernel, dtables[static_cast<size_t>(t)]->data(),
           start ? dstart_tables[static_cast<size_t>(t)]->data() : nullptr, pp, count, pdy + t * N * E, c0, c1);
    }
  };
  const int parts = parts_for(work);
  if (parts <= 1)
    units(0, T * blocks);
  else
    over_row_blocks(std::vector<int64_t>(static_cast<size_t>(T * blocks), 1), parts, units);
  flops::add(work);
  if (!sample) return Tensor();

  // dw[n, j] = Σ_t dy[t, n] · (l_j ∘ table_t[ids[n, j]]): bag by bag, the tables in order.
  Tensor dw(ids.shape());
  float* pdw = dw.data();
  auto weights = [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t n = pp[k], J = v.len[n];
      for (int64_t j = 0; j < J; ++j) {
        float sum = 0.0f;
        for (int64_t t = 0; t < T; ++t) {
          const float* x = cache.tables[static_cast<size_t>(t)].data() + static_cast<int64_t>(v.ids[n * W + j]) * E;
          const float* g = pdy + (t * N + n) * E;
          sum += position ? dot3(g, v.pw + (J * v.L + j) * E, x, E) : dot(g, x, E);
        }
        pdw[n * W + j] = sum;
      }
    }
  };
  if (parts <= 1)
    weights(0, count);
  else
    over_row_blocks(bag_costs(pp, count, v.len), parts, weights);
  flops::add(work);
  return dw;
}

void weighted_rows_sum(const float* rows, int64_t E, const float* w, int64_t n, float* out) {
  weighted_sum_kernel(E)(rows, E, w, n, out);
}

void rows_dot(const float* rows, int64_t E, const float* v, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = dot(v, rows + i * E, E);
}

void weighted_rows_sum_backward(const float* rows, int64_t E, const float* w, int64_t n, const float* g, float* dw,
                                float* drows, bool accumulate) {
  // One call site per kind (the memory network alternates them hop by hop): each keeps one target.
  if (dw != nullptr) {
    if (accumulate)
      weighted_sum_backward_kernel<true, true>(E)(rows, E, w, n, g, dw, drows);
    else
      weighted_sum_backward_kernel<true, false>(E)(rows, E, w, n, g, dw, drows);
  } else {
    if (accumulate)
      weighted_sum_backward_kernel<false, true>(E)(rows, E, w, n, g, dw, drows);
    else
      weighted_sum_backward_kernel<false, false>(E)(rows, E, w, n, g, dw, drows);
  }
}

}  // namespace attn::ops

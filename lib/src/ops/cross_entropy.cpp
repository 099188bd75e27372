// Fused softmax cross-entropy: validation of targets (serial, so the error names the first bad
// row), the per-row forward (max and sum of x, then sum of exp), and the one-pass backward.
#include "attn/ops/cross_entropy.hpp"

#include "attn/core/threading.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "attn/ops/softmax.hpp"

namespace attn::ops {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Shortest form of a float for messages ("1", "-0.5"), unlike std::to_string's "1.000000".
std::string str(float v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Writes dlogits into out, which may be the logits themselves (each row is read before it is
// overwritten, and softmax(x)_v needs only the element being replaced).
void write_dlogits(float dloss, const CrossEntropyCache& cache, float* out) {
  if (!cache.logits.defined())
    throw Error("cross_entropy_backward: the cache is empty (pass a cache to the forward call, "
                "and call the in-place backward at most once)");
  const int64_t N = cache.logits.dim(0), V = cache.logits.dim(1);
  const float* x = cache.logits.data();
  const float *row_max = cache.row_max.data(), *log_sum = cache.log_sum.data();
  const int32_t* t = cache.targets.idata();
  const int32_t ignore = cache.options.ignore_index;
  const float eps = cache.options.label_smoothing;
  const float scale = cache.count ? dloss / static_cast<float>(cache.count) : 0.0f;
  const float uniform = eps * scale / static_cast<float>(V), on_target = (1.0f - eps) * scale;
#pragma omp parallel for schedule(static) if (worth_splitting(N * V))
  for (int64_t i = 0; i < N; ++i) {
    float* g = out + i * V;
    if (t[i] == ignore || cache.count == 0) {
      std::fill(g, g + V, 0.0f);
      continue;
    }
    const float* row = x + i * V;
    const float m = row_max[i], log_s = log_sum[i];
#pragma omp simd
    for (int64_t v = 0; v < V; ++v) g[v] = exp_approx((row[v] - m) - log_s) * scale - uniform;
    g[t[i]] -= on_target;
  }
}

// Checks shapes, options and targets (serially, so the error names the first bad row);
// returns the number of counted rows.
int64_t check_inputs(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& options) {
  check_tensor(logits, {kAny, kAny}, "cross_entropy: logits [N, V]");
  const int64_t N = logits.dim(0), V = logits.dim(1);
  check_tensor(targets, {N}, "cross_entropy: targets [N]", DType::i32);
  if (V == 0) throw ShapeError("cross_entropy: logits [N, V] has V = 0, expected V >= 1");
  const float eps = options.label_smoothing;
  if (!(eps >= 0.0f && eps < 1.0f))
    throw ConfigError("cross_entropy: label_smoothing must be in [0, 1), got " + str(eps));
  const int32_t* t = targets.idata();
  const int32_t ignore = options.ignore_index;
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (t[i] == ignore) continue;
    if (t[i] < 0 || t[i] >= V)
      throw DataError("cross_entropy: target " + std::to_string(t[i]) + " at row " +
                      std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(V) +
                      ") and is not ignore_index (" + std::to_string(ignore) + ")");
    ++count;
  }
  return count;
}

// The loss sums from the per-row losses and NLLs, in row order (thread-count independent).
void finish_result(CrossEntropyResult& result, const float* nll, int64_t N, int64_t count, int64_t correct) {
  const float* loss = result.losses.data();
  for (int64_t i = 0; i < N; ++i) {
    result.sum += loss[i];
    result.nll_sum += nll[i];
  }
  result.count = count;
  result.correct = correct;
  result.loss = count ? static_cast<float>(result.sum / static_cast<double>(count)) : 0.0f;
}

}  // namespace

CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                         const CrossEntropyOptions& options,
                                         CrossEntropyCache* cache) {
  const int64_t count = check_inputs(logits, targets, options);
  const int64_t N = logits.dim(0), V = logits.dim(1);
  const float eps = options.label_smoothing;
  const int32_t* t = targets.idata();
  const int32_t ignore = options.ignore_index;

  CrossEntropyResult result;
  result.losses = Tensor({N});
  Tensor row_max({N}), log_sum({N}), nll_rows({N});
  const float* x = logits.data();
  float* loss = result.losses.data();
  float* nll_p = nll_rows.data();
  float *max_p = row_max.data(), *log_sum_p = log_sum.data();
  int64_t correct = 0;
#pragma omp parallel for schedule(static) reduction(+ : correct) if (worth_splitting(N * V))
  for (int64_t i = 0; i < N; ++i) {
    if (t[i] == ignore) continue;   // its loss stays 0
    const float* row = x + i * V;
    float m = kNegInf, sum_x = 0.0f;
#pragma omp simd reduction(max : m) reduction(+ : sum_x)
    for (int64_t v = 0; v < V; ++v) {
      m = row[v] > m ? row[v] : m;
      sum_x += row[v];
    }
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t v = 0; v < V; ++v) s += exp_approx(row[v] - m);
    // -log p_v = lse - x_v, computed as (m - x_v) + log s: lse itself would round at the
    // scale of m, losing the small differences that are the whole answer.
    const float log_s = std::log(s);
    const float nll = (m - row[t[i]]) + log_s;
    max_p[i] = m;
    log_sum_p[i] = log_s;
    nll_p[i] = nll;
    loss[i] = eps > 0.0f ? (1.0f - eps) * nll + eps * ((m - sum_x / static_cast<float>(V)) + log_s)
                         : nll;
    correct += row[t[i]] >= m;
  }

  finish_result(result, nll_p, N, count, correct);
  if (cache) *cache = CrossEntropyCache{logits, targets, row_max, log_sum, count, options};
  return result;
}

CrossEntropyResult cross_entropy_forward_backward_inplace(Tensor& logits, const Tensor& targets,
                                                          const CrossEntropyOptions& options, float dloss) {
  const int64_t count = check_inputs(logits, targets, options);
  const int64_t N = logits.dim(0), V = logits.dim(1);
  const float eps = options.label_smoothing;
  const int32_t* t = targets.idata();
  const int32_t ignore = options.ignore_index;
  const float scale = count ? dloss / static_cast<float>(count) : 0.0f;
  const float uniform = eps * scale / static_cast<float>(V), on_target = (1.0f - eps) * scale;

  CrossEntropyResult result;
  result.losses = Tensor({N});
  Tensor nll_rows({N});
  float* x = logits.data();
  float* loss = result.losses.data();
  float* nll_p = nll_rows.data();
  int64_t correct = 0;
#pragma omp parallel for schedule(static) reduction(+ : correct) if (worth_splitting(N * V))
  for (int64_t i = 0; i < N; ++i) {
    float* row = x + i * V;
    if (t[i] == ignore || count == 0) {   // its loss stays 0, its gradient is 0
      std::fill(row, row + V, 0.0f);
      continue;
    }
    float m = kNegInf, sum_x = 0.0f;
#pragma omp simd reduction(max : m) reduction(+ : sum_x)
    for (int64_t v = 0; v < V; ++v) {
      m = row[v] > m ? row[v] : m;
      sum_x += row[v];
    }
    const float x_t = row[t[i]];
    float s = 0.0f;   // e_v = exp(x_v - m) replaces x_v
#pragma omp simd reduction(+ : s)
    for (int64_t v = 0; v < V; ++v) {
      const float e = exp_approx(row[v] - m);
      row[v] = e;
      s += e;
    }
    const float log_s = std::log(s);
    const float nll = (m - x_t) + log_s;   // as in cross_entropy_forward
    nll_p[i] = nll;
    loss[i] = eps > 0.0f ? (1.0f - eps) * nll + eps * ((m - sum_x / static_cast<float>(V)) + log_s) : nll;
    correct += x_t >= m;
    const float p_scale = scale / s;   // softmax_v * scale = e_v * scale / s
#pragma omp simd
    for (int64_t v = 0; v < V; ++v) row[v] = row[v] * p_scale - uniform;
    row[t[i]] -= on_target;
  }
  finish_result(result, nll_p, N, count, correct);
  return result;
}

Tensor cross_entropy_backward(float dloss, const CrossEntropyCache& cache) {
  Tensor dlogits(cache.logits.defined() ? cache.logits.shape() : Shape{0});
  write_dlogits(dloss, cache, dlogits.data());
  return dlogits;
}

Tensor cross_entropy_backward_inplace(float dloss, CrossEntropyCache& cache) {
  Tensor dlogits = cache.logits;
  write_dlogits(dloss, cache, dlogits.defined() ? dlogits.data() : nullptr);
  cache.logits = Tensor();   // its values are gone: a second backward must not read them
  return dlogits;
}

}  // namespace attn::ops

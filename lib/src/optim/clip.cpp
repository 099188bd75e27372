// Gradient clipping by global norm and by value, with a norm that does not depend on the
// thread count.
#include "attn/optim/clip.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "detail.hpp"

namespace attn::optim {
namespace {

// The sum of squares is taken over fixed blocks (in double), and the block sums are added in
// order: the bits of the result depend on the data only, never on how blocks map to threads.
// Within a block the simd reduction's lane order is fixed at compile time, so it is as
// deterministic as a serial loop.
constexpr int64_t kBlock = int64_t{1} << 14;

double block_sum_squares(const float* x, int64_t n) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * x[i];
  return acc;
}

double sum_squares(const float* x, int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks <= 1) return block_sum_squares(x, n);
  std::vector<double> partial(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t b = 0; b < blocks; ++b)
    partial[static_cast<size_t>(b)] = block_sum_squares(x + b * kBlock, std::min(kBlock, n - b * kBlock));
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

void scale(float* x, int64_t n, float s) {
#pragma omp parallel for simd schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace

double grad_norm(const ParamList& params) {
  double total = 0.0;
  for (const Param* p : params) total += sum_squares(p->grad.data(), p->grad.numel());
  return std::sqrt(total);
}

double clip_grad_norm(const ParamList& params, double max_norm) {
  detail::require(max_norm > 0.0 && std::isfinite(max_norm), "clip_grad_norm", "max_norm", "finite and > 0",
                  max_norm);
  const double norm = grad_norm(params);
  if (std::isfinite(norm) && norm > max_norm) {
    const float s = static_cast<float>(max_norm / norm);
    for (Param* p : params) scale(p->grad.data(), p->grad.numel(), s);
  }
  return norm;
}

void clip_grad_value(const ParamList& params, float limit) {
  detail::require(limit > 0.0f && std::isfinite(limit), "clip_grad_value", "limit", "finite and > 0", limit);
  for (Param* p : params) {
    float* g = p->grad.data();
    const int64_t n = p->grad.numel();
#pragma omp parallel for simd schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) g[i] = g[i] > limit ? limit : (g[i] < -limit ? -limit : g[i]);
  }
}

}  // namespace attn::optim

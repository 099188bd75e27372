// Softmax and log-softmax: the per-row kernels (templated on how a row is masked, so the
// unmasked path carries no mask test at all), the broadcast of a mask onto rows, and the
// tensor-level forward/backward pairs. Three contiguous passes per row in the forward (max,
// exponentiate-and-sum, scale), two in the backward; rows are spread over OpenMP threads.
#include "attn/ops/softmax.hpp"

#include "attn/core/threading.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace attn::ops {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// How a row is masked: AllKept for none, MaskRow for a row of a float32/int32 keep-mask.
struct AllKept {
  bool operator[](int64_t) const { return true; }
};
template <class T>
struct MaskRow {
  const T* m;
  bool operator[](int64_t j) const { return m[j] != 0; }
};

// max over the kept x_j; -inf when none is kept.
template <class Keep>
float kept_max(const float* x, Keep keep, int64_t L) {
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < L; ++j) {
    const float v = keep[j] ? x[j] : kNegInf;
    m = v > m ? v : m;
  }
  return m;
}

// One row of softmax (Log = false) or log-softmax (Log = true) of x into y; y may alias x.
template <bool Log, class Keep>
void normalise_row(const float* x, Keep keep, float* y, int64_t L) {
  const float m = kept_max(x, keep, L);
  if (m == kNegInf) {   // nothing to normalise over: probability 0 everywhere
    std::fill(y, y + L, Log ? kNegInf : 0.0f);
    return;
  }
  float s = 0.0f;
  if constexpr (Log) {
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < L; ++j) s += keep[j] ? exp_approx(x[j] - m) : 0.0f;
    const float log_s = std::log(s);   // x - (m + log s) would round at the scale of m
#pragma omp simd
    for (int64_t j = 0; j < L; ++j) y[j] = keep[j] ? (x[j] - m) - log_s : kNegInf;
  } else {
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < L; ++j) {
      const float e = keep[j] ? exp_approx(x[j] - m) : 0.0f;
      y[j] = e;
      s += e;
    }
    const float inv = 1.0f / s;
#pragma omp simd
    for (int64_t j = 0; j < L; ++j) y[j] *= inv;
  }
}

void softmax_row_backward(const float* y, const float* dy, float* dx, int64_t L) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < L; ++j) s += dy[j] * y[j];
#pragma omp simd
  for (int64_t j = 0; j < L; ++j) dx[j] = y[j] * (dy[j] - s);
}

void log_softmax_row_backward(const float* y, const float* dy, float* dx, int64_t L) {
  float s = 0.0f;   // masked outputs are constants: their dy reaches nothing
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < L; ++j) s += y[j] == kNegInf ? 0.0f : dy[j];
#pragma omp simd
  for (int64_t j = 0; j < L; ++j) dx[j] = y[j] == kNegInf ? 0.0f : dy[j] - exp_approx(y[j]) * s;
}

template <bool Log>
void normalise_rows(const float* x, float* y, int64_t rows, int64_t L) {
#pragma omp parallel for schedule(static) if (worth_splitting(rows * L))
  for (int64_t r = 0; r < rows; ++r) normalise_row<Log>(x + r * L, AllKept{}, y + r * L, L);
}

// Where each row's mask starts when a mask is broadcast against x: [..., L] (numpy rules).
struct MaskPlan {
  Shape lead;                    // x's leading dimensions (all but L)
  std::vector<int64_t> stride;   // the mask's stride along each of them, 0 where broadcast
  bool per_element = false;      // the mask's last dimension is L (else 1: a flag per row)

  int64_t offset(int64_t row) const {
    int64_t off = 0;
    for (size_t d = lead.size(); d-- > 0;) {
      off += (row % lead[d]) * stride[d];
      row /= lead[d];
    }
    return off;
  }
};

MaskPlan plan_mask(const Shape& xs, const Tensor& mask, const char* op) {
  const Shape& ms = mask.shape();
  if (mask.dtype() != DType::f32 && mask.dtype() != DType::i32)
    throw ShapeError(std::string(op) + ": mask has dtype " + dtype_name(mask.dtype()) +
                     ", expected float32 or int32");
  bool fits = ms.size() <= xs.size();
  for (size_t i = 0; fits && i < ms.size(); ++i) {
    const int64_t m = ms[ms.size() - 1 - i], x = xs[xs.size() - 1 - i];
    fits = m == 1 || m == x;
  }
  if (!fits)
    throw ShapeError(std::string(op) + ": mask has shape " + to_string(ms) +
                     ", which does not broadcast to x [..., L] of shape " + to_string(xs) +
                     " (each mask dimension, aligned on the right, must be 1 or equal)");
  MaskPlan plan;
  const size_t rank = xs.size(), pad = rank - ms.size();
  auto mask_dim = [&](size_t d) { return d < pad ? int64_t{1} : ms[d - pad]; };
  plan.per_element = mask_dim(rank - 1) != 1 || xs[rank - 1] == 1;
  plan.lead.assign(xs.begin(), xs.end() - 1);
  plan.stride.assign(rank - 1, 0);
  int64_t stride = mask_dim(rank - 1);
  for (size_t d = rank - 1; d-- > 0;) {
    plan.stride[d] = mask_dim(d) == 1 ? 0 : stride;
    stride *= mask_dim(d);
  }
  return plan;
}

template <bool Log, class T>
void normalise_rows_masked(const float* x, const T* mask, const MaskPlan& plan, float* y,
                           int64_t rows, int64_t L) {
#pragma omp parallel for schedule(static) if (worth_splitting(rows * L))
  for (int64_t r = 0; r < rows; ++r) {
    const T* m = mask + plan.offset(r);
    if (plan.per_element)
      normalise_row<Log>(x + r * L, MaskRow<T>{m}, y + r * L, L);
    else if (*m != 0)
      normalise_row<Log>(x + r * L, AllKept{}, y + r * L, L);
    else
      std::fill(y + r * L, y + (r + 1) * L, Log ? kNegInf : 0.0f);
  }
}

template <bool Log>
Tensor forward(const Tensor& x, const Tensor* mask, const char* op) {
  if (x.rank() < 1)
    throw ShapeError(std::string(op) + ": x [..., L] has shape [], expected rank >= 1");
  check_tensor(x, x.shape(), std::string(op) + ": x [..., L]");   // dtype
  Tensor y(x.shape());
  const int64_t L = x.dim(-1), rows = L ? x.numel() / L : 0;
  if (!mask) {
    normalise_rows<Log>(x.data(), y.data(), rows, L);
  } else {
    const MaskPlan plan = plan_mask(x.shape(), *mask, op);
    if (mask->dtype() == DType::f32)
      normalise_rows_masked<Log>(x.data(), mask->data(), plan, y.data(), rows, L);
    else
      normalise_rows_masked<Log>(x.data(), mask->idata(), plan, y.data(), rows, L);
  }
  return y;
}

void check_backward(const Tensor& dy, const Tensor& y, const char* op) {
  if (!y.defined())
    throw Error(std::string(op) + ": the cache is empty (pass a cache to the forward call)");
  check_tensor(dy, y.shape(), std::string(op) + ": dy [..., L]");
}

}  // namespace

void softmax_rows_inplace(float* x, int64_t rows, int64_t L) { normalise_rows<false>(x, x, rows, L); }

void log_softmax_rows_inplace(float* x, int64_t rows, int64_t L) { normalise_rows<true>(x, x, rows, L); }

void softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t L) {
#pragma omp parallel for schedule(static) if (worth_splitting(rows * L))
  for (int64_t r = 0; r < rows; ++r) softmax_row_backward(y + r * L, dy + r * L, dx + r * L, L);
}

void log_softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t rows,
                               int64_t L) {
#pragma omp parallel for schedule(static) if (worth_splitting(rows * L))
  for (int64_t r = 0; r < rows; ++r) log_softmax_row_backward(y + r * L, dy + r * L, dx + r * L, L);
}

Tensor softmax_forward(const Tensor& x, SoftmaxCache* cache) {
  Tensor y = forward<false>(x, nullptr, "softmax");
  if (cache) cache->y = y;
  return y;
}

Tensor softmax_forward(const Tensor& x, const Tensor& mask, SoftmaxCache* cache) {
  Tensor y = forward<false>(x, &mask, "softmax");
  if (cache) cache->y = y;
  return y;
}

Tensor softmax_backward(const Tensor& dy, const SoftmaxCache& cache) {
  check_backward(dy, cache.y, "softmax_backward");
  Tensor dx(dy.shape());
  const int64_t L = dy.dim(-1), rows = L ? dy.numel() / L : 0;
  softmax_rows_backward(cache.y.data(), dy.data(), dx.data(), rows, L);
  return dx;
}

Tensor log_softmax_forward(const Tensor& x, LogSoftmaxCache* cache) {
  Tensor y = forward<true>(x, nullptr, "log_softmax");
  if (cache) cache->y = y;
  return y;
}

Tensor log_softmax_forward(const Tensor& x, const Tensor& mask, LogSoftmaxCache* cache) {
  Tensor y = forward<true>(x, &mask, "log_softmax");
  if (cache) cache->y = y;
  return y;
}

Tensor log_softmax_backward(const Tensor& dy, const LogSoftmaxCache& cache) {
  check_backward(dy, cache.y, "log_softmax_backward");
  Tensor dx(dy.shape());
  const int64_t L = dy.dim(-1), rows = L ? dy.numel() / L : 0;
  log_softmax_rows_backward(cache.y.data(), dy.data(), dx.data(), rows, L);
  return dx;
}

}  // namespace attn::ops

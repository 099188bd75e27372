// Pointwise activations. Every forward and backward is one flat loop over contiguous memory
// (threaded above kParallelElems) with the scalar formula inlined through a lambda.
#include "attn/ops/activation.hpp"

#include <algorithm>
#include <cmath>

#include "strided_loop.hpp"

namespace attn::ops {
namespace {

using detail::kParallelElems;

constexpr float kSqrtHalf = 0.70710678118654752f;        // 1 / sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143268f;      // 1 / sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286536f;     // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

// y_i = f(x_i), a new tensor of x's shape.
template <class F>
Tensor map1(const Tensor& x, const char* label, F f) {
  check_tensor(x, x.shape(), label);
  Tensor y = Tensor::uninitialized(x.shape());
  const float* px = x.data();
  float* py = y.data();
  const int64_t n = x.numel();
#pragma omp parallel for simd schedule(static) if (n >= kParallelElems)
  for (int64_t i = 0; i < n; ++i) py[i] = f(px[i]);
  return y;
}

// dx_i = f(dy_i, s_i) where s is the cached tensor; checks that dy matches it.
template <class F>
Tensor map2(const Tensor& dy, const Tensor& saved, const char* label, F f) {
  check_tensor(dy, saved.shape(), label);
  Tensor dx = Tensor::uninitialized(dy.shape());
  const float* pd = dy.data();
  const float* ps = saved.data();
  float* px = dx.data();
  const int64_t n = dy.numel();
#pragma omp parallel for simd schedule(static) if (n >= kParallelElems)
  for (int64_t i = 0; i < n; ++i) px[i] = f(pd[i], ps[i]);
  return dx;
}

// erf(x) as a rational function of x^2 on [-4, 4] (beyond it erf is +-1 in float), the
// approximation of Eigen's generic_fast_erf_float and XLA's ErfImpl32. Max absolute error
// 4e-7 against the double erf (tests check it); unlike std::erf it has no branches or
// calls, so the GELU loops vectorise, which makes them several times faster (bench/README.md,
// "Vector clones, exp, tanh and random numbers in bulk").
inline float erf_fast(float a) {
  const float x = std::clamp(a, -4.0f, 4.0f), x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return x * p / q;
}

inline float gelu_exact(float x) { return 0.5f * x * (1.0f + erf_fast(x * kSqrtHalf)); }
inline float gelu_exact_grad(float x) {
  const float cdf = 0.5f * (1.0f + erf_fast(x * kSqrtHalf));
  const float pdf = kInvSqrt2Pi * std::exp(-0.5f * x * x);
  return cdf + x * pdf;
}
inline float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
}
inline float gelu_tanh_grad(float x) {
  const float t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

}  // namespace

Tensor tanh_forward(const Tensor& x, TanhCache* cache) {
  Tensor y = map1(x, "tanh: x", [](float v) { return std::tanh(v); });
  if (cache) cache->y = y;
  return y;
}

Tensor tanh_backward(const Tensor& dy, const TanhCache& cache) {
  return map2(dy, cache.y, "tanh_backward: dy (shape of y)",
              [](float g, float y) { return g * (1.0f - y * y); });
}

Tensor sigmoid_forward(const Tensor& x, SigmoidCache* cache) {
  Tensor y = map1(x, "sigmoid: x", [](float v) { return sigmoid(v); });
  if (cache) cache->y = y;
  return y;
}

Tensor sigmoid_backward(const Tensor& dy, const SigmoidCache& cache) {
  return map2(dy, cache.y, "sigmoid_backward: dy (shape of y)",
              [](float g, float y) { return g * y * (1.0f - y); });
}

Tensor relu_forward(const Tensor& x, ReluCache* cache) {
  Tensor y = map1(x, "relu: x", [](float v) { return v > 0.0f ? v : 0.0f; });
  if (cache) cache->y = y;
  return y;
}

Tensor relu_backward(const Tensor& dy, const ReluCache& cache) {
  return map2(dy, cache.y, "relu_backward: dy (shape of y)",
              [](float g, float y) { return y > 0.0f ? g : 0.0f; });
}

Tensor gelu_forward(const Tensor& x, GeluApprox approx, GeluCache* cache) {
  Tensor y = approx == GeluApprox::tanh ? map1(x, "gelu: x", gelu_tanh)
                                        : map1(x, "gelu: x", gelu_exact);
  if (cache) *cache = {x, approx};
  return y;
}

Tensor gelu_backward(const Tensor& dy, const GeluCache& cache) {
  const char* label = "gelu_backward: dy (shape of x)";
  if (cache.approx == GeluApprox::tanh)
    return map2(dy, cache.x, label, [](float g, float x) { return g * gelu_tanh_grad(x); });
  return map2(dy, cache.x, label, [](float g, float x) { return g * gelu_exact_grad(x); });
}

Activation activation_from_string(const std::string& name) {
  for (Activation a : {Activation::identity, Activation::tanh, Activation::sigmoid,
                       Activation::relu, Activation::gelu, Activation::gelu_tanh})
    if (name == activation_name(a)) return a;
  throw ConfigError("unknown activation '" + name +
                    "' (expected identity, tanh, sigmoid, relu, gelu or gelu_tanh)");
}

const char* activation_name(Activation kind) {
  switch (kind) {
    case Activation::identity: return "identity";
    case Activation::tanh: return "tanh";
    case Activation::sigmoid: return "sigmoid";
    case Activation::relu: return "relu";
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_tanh";
  }
  return "?";
}

Tensor activation_forward(const Tensor& x, Activation kind, ActivationCache* cache) {
  Tensor y;
  switch (kind) {
    case Activation::identity: check_tensor(x, x.shape(), "identity: x"); y = x; break;
    case Activation::tanh: y = tanh_forward(x, nullptr); break;
    case Activation::sigmoid: y = sigmoid_forward(x, nullptr); break;
    case Activation::relu: y = relu_forward(x, nullptr); break;
    case Activation::gelu: y = gelu_forward(x, GeluApprox::none, nullptr); break;
    case Activation::gelu_tanh: y = gelu_forward(x, GeluApprox::tanh, nullptr); break;
  }
  if (cache) {
    cache->kind = kind;
    const bool keeps_input = kind == Activation::gelu || kind == Activation::gelu_tanh;
    cache->saved = kind == Activation::identity ? Tensor() : keeps_input ? x : y;
  }
  return y;
}

Tensor activation_backward(const Tensor& dy, const ActivationCache& cache) {
  switch (cache.kind) {
    case Activation::identity: check_tensor(dy, dy.shape(), "identity_backward: dy"); return dy.clone();
    case Activation::tanh: return tanh_backward(dy, {cache.saved});
    case Activation::sigmoid: return sigmoid_backward(dy, {cache.saved});
    case Activation::relu: return relu_backward(dy, {cache.saved});
    case Activation::gelu: return gelu_backward(dy, {cache.saved, GeluApprox::none});
    case Activation::gelu_tanh: return gelu_backward(dy, {cache.saved, GeluApprox::tanh});
  }
  return {};
}

}  // namespace attn::ops

// Pointwise activations: tanh, sigmoid, relu and GELU (exact erf form by default, as in
// PyTorch; the tanh approximation of Hendrycks & Gimpel 2016, eq. 2, on request), each a
// forward/backward pair on tensors of any shape, plus `activation_forward/backward` that
// dispatch on an enum for layers whose activation is a configuration value.
//
// What each backward reads: tanh, sigmoid and relu differentiate from the cached OUTPUT y
// (tanh' = 1 - y^2, sigmoid' = y (1 - y), relu' = [y > 0]); GELU from the cached INPUT x.
// The caches share storage with the tensors passed in or returned (no copy is made), so
// neither may be modified in place between forward and backward.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "attn/core/tensor.hpp"
#include "attn/ops/softmax.hpp"

namespace attn::ops {

// The library's sigmoid, σ(x) = 1 / (1 + e^-x), in its two forms; every sigmoid in attnlab is one
// of these two functions.
//
// sigmoid: with libm's expf (within 1 ulp), never overflowing: e^-x for x >= 0, else e^x / (1 + e^x),
// so that e is only ever taken of a non-positive number and σ keeps its relative accuracy in the far
// negative tail (down to the subnormals). The branch keeps loops calling it scalar: for scalars
// (the attention decoder's gate), for the activation op, and for the NTM's head gates and loss.
inline float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

// sigmoid_fast: with exp_approx (ops/softmax.hpp, within 2 ulp of expf) and no branch, so that
// loops calling it vectorise: the gate nonlinearities of the LSTM and GRU cells' fused passes,
// where expf would dominate the step as tanhf did (see tanh_fast below). Within a few ulp of
// sigmoid for |x| <= 87 (tests/ops/test_activation.cpp); beyond, exactly 1 above and within
// 1e-38 of 0 below (exp_approx's clamp), never NaN but for a NaN x.
inline float sigmoid_fast(float x) { return 1.0f / (1.0f + exp_approx(-x)); }

// tanh for float as the 13/6-degree rational interpolant of Eigen
// (Eigen/src/Core/MathFunctionsImpl.h, generic_fast_tanh_float, MPL 2.0): no exp, no branches
// but a clamp, within 7 ulps (4e-7 absolute) of the exact value on all floats, and several times
// faster than libm's tanhf because loops calling it vectorise (bench/README.md, "Vector clones,
// exp, tanh and random numbers in bulk"). For the fused loops of the recurrent cells and of
// additive attention, where tanhf would dominate.
inline float tanh_fast(float v) {
  // Outside [-c, c] tanh rounds to +-1 in float; c is where the interpolant reaches 1.
  const float c = 7.90531110763549805f;
  const float x = std::clamp(v, -c, c);
  const float x2 = x * x;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  // Near 0 the quotient loses relative accuracy; tanh(x) = x to float precision there.
  return std::fabs(v) < 4e-4f ? v : x * p / q;
}

// y = tanh(x).   x: [...]   ->   y: [...]
struct TanhCache { Tensor y; };
Tensor tanh_forward(const Tensor& x, TanhCache* cache);
// Returns new dx = dy * (1 - y^2).
Tensor tanh_backward(const Tensor& dy, const TanhCache& cache);

// y = 1 / (1 + exp(-x)), evaluated without overflow for large |x|.
struct SigmoidCache { Tensor y; };
Tensor sigmoid_forward(const Tensor& x, SigmoidCache* cache);
// Returns new dx = dy * y * (1 - y).
Tensor sigmoid_backward(const Tensor& dy, const SigmoidCache& cache);

// y = max(x, 0).
struct ReluCache { Tensor y; };
Tensor relu_forward(const Tensor& x, ReluCache* cache);
// Returns new dx = dy * [y > 0] (the subgradient at 0 is 0, as in PyTorch).
Tensor relu_backward(const Tensor& dy, const ReluCache& cache);

// GELU(x) = x * Phi(x) with Phi the standard normal CDF: 0.5 x (1 + erf(x / sqrt 2)) exactly,
// or 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with GeluApprox::tanh. "Exactly" means
// to float precision: erf is evaluated by a vectorisable rational approximation (absolute
// error below 5e-7), so GELU and its derivative are within 1.5e-6 of the double-precision
// formula everywhere (the largest deviations in the far negative tail, where GELU ~ 0).
// Reference: Hendrycks & Gimpel, "Gaussian Error Linear Units", 2016.
enum class GeluApprox { none, tanh };
struct GeluCache {
  Tensor x;
  GeluApprox approx = GeluApprox::none;
};
Tensor gelu_forward(const Tensor& x, GeluApprox approx, GeluCache* cache);
// Returns new dx = dy * GELU'(x): Phi(x) + x phi(x) exactly (phi the normal density), or the
// derivative of the tanh form.
Tensor gelu_backward(const Tensor& dy, const GeluCache& cache);

// The same activations chosen at run time.
enum class Activation { identity, tanh, sigmoid, relu, gelu, gelu_tanh };
// "identity", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh"; anything else throws ConfigError
// listing the valid names.
Activation activation_from_string(const std::string& name);
const char* activation_name(Activation kind);

struct ActivationCache {
  Activation kind = Activation::identity;
  Tensor saved;   // y for tanh, sigmoid, relu; x for gelu, gelu_tanh; nothing for identity
};
// y = f(x). identity returns x itself (shared storage, no copy).
Tensor activation_forward(const Tensor& x, Activation kind, ActivationCache* cache);
// Returns new dx = dy * f'(.) (for identity, a copy of dy).
Tensor activation_backward(const Tensor& dy, const ActivationCache& cache);

}  // namespace attn::ops

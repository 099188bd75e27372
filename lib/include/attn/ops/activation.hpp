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
#include <string>

#include "attn/core/tensor.hpp"

namespace attn::ops {

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

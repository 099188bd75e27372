// The basic layers: a layer owns its Params (named by module path) and wraps the forward and
// backward ops of ops/. Caches are passed in by the caller, so one layer can be applied many
// times in a step (an RNN decoder applies its output layer once per target position), each
// application keeping its own cache.
#pragma once
#include <cstdint>
#include <string>

#include "attn/core/rng.hpp"
#include "attn/nn/param.hpp"
#include "attn/ops/activation.hpp"
#include "attn/ops/dropout.hpp"
#include "attn/ops/embedding.hpp"
#include "attn/ops/layer_norm.hpp"
#include "attn/ops/linear.hpp"

namespace attn::nn {

// y = x W^T + b.   x: [..., in]   W: [out, in] (Glorot uniform)   b: [out] (zeros, optional)
class Linear {
 public:
  Linear() = default;
  Linear(int64_t in, int64_t out, const std::string& name, Rng& rng, bool bias = true);
  Tensor forward(const Tensor& x, ops::LinearCache* cache) const {
    return ops::linear_forward(x, W.value, b.value, cache);
  }
  // Adds into W.grad and b.grad; returns dx (new tensor).
  Tensor backward(const Tensor& dy, const ops::LinearCache& cache) {
    return ops::linear_backward(dy, W.value, cache, W.grad, b.grad);
  }
  ParamList params();
  int64_t in_features() const { return W.value.dim(1); }
  int64_t out_features() const { return W.value.dim(0); }

  Param W, b;
};

// Token embedding: ids [...] -> [..., E], table [V, E] ~ N(0, stddev^2). Rows of `padding_id`
// (PAD = 0 by convention) start at zero and receive no gradient.
class Embedding {
 public:
  Embedding() = default;
  Embedding(int64_t vocab, int64_t dim, const std::string& name, Rng& rng, float stddev,
            int32_t padding_id = ops::kNoPadding);
  // With a cache (training), announces the rows of `ids` (nn/grad_ready.hpp), as backward does.
  Tensor forward(const Tensor& ids, ops::EmbeddingCache* cache) const;
  // Adds into the rows of cache's ids.
  void backward(const Tensor& dy, const ops::EmbeddingCache& cache);
  ParamList params() { return {&table}; }
  int64_t vocab() const { return table.value.dim(0); }
  int64_t dim() const { return table.value.dim(1); }

  Param table;

 private:
  int32_t padding_id_ = ops::kNoPadding;
};

// Layer normalisation over the last dimension (Ba et al. 2016): gamma = 1, beta = 0 at start.
class LayerNorm {
 public:
  LayerNorm() = default;
  LayerNorm(int64_t dim, const std::string& name, float eps = 1e-5f);
  Tensor forward(const Tensor& x, ops::LayerNormCache* cache) const {
    return ops::layer_norm_forward(x, gamma.value, beta.value, eps_, cache);
  }
  Tensor backward(const Tensor& dy, const ops::LayerNormCache& cache) {
    return ops::layer_norm_backward(dy, gamma.value, cache, gamma.grad, beta.grad);
  }
  ParamList params() { return {&gamma, &beta}; }

  Param gamma, beta;

 private:
  float eps_ = 1e-5f;
};

// Position-wise feed-forward network (Vaswani et al. 2017, eq. 2): act(x W1^T + b1) W2^T + b2,
// with dropout on the hidden activation. x: [..., D] -> [..., D]; hidden width F.
struct FeedForwardCache {
  ops::LinearCache in, out;
  ops::ActivationCache act;
  ops::DropoutCache drop;
};
class FeedForward {
 public:
  FeedForward() = default;
  FeedForward(int64_t dim, int64_t hidden, ops::Activation activation, const std::string& name, Rng& rng);
  Tensor forward(const Tensor& x, float dropout, bool training, Rng& rng, FeedForwardCache* cache) const;
  Tensor backward(const Tensor& dy, const FeedForwardCache& cache);
  ParamList params();

  Linear in, out;

 private:
  ops::Activation activation_ = ops::Activation::relu;
};

// Appends the params of `more` to `list` (models gather their layers' params this way).
inline void append(ParamList& list, const ParamList& more) { list.insert(list.end(), more.begin(), more.end()); }

}  // namespace attn::nn

// Constructors and the composite feed-forward layer; the simple layers are inline wrappers.
#include "attn/nn/layers.hpp"

#include "attn/nn/grad_ready.hpp"
#include "attn/nn/init.hpp"

namespace attn::nn {

Linear::Linear(int64_t in, int64_t out, const std::string& name, Rng& rng, bool bias)
    : W(name + "/W", glorot_uniform({out, in}, rng)) {
  if (bias) b = Param(name + "/b", Tensor({out}));
}

ParamList Linear::params() {
  ParamList list{&W};
  if (b.value.defined()) list.push_back(&b);
  return list;
}

Embedding::Embedding(int64_t vocab, int64_t dim, const std::string& name, Rng& rng, float stddev,
                     int32_t padding_id)
    : table(name + "/table", normal_init({vocab, dim}, rng, stddev)), padding_id_(padding_id) {
  if (padding_id >= 0 && padding_id < vocab) table.value[padding_id].zero();
  table.sparse_rows = true;   // a batch's tokens' rows (a model that ties an output layer to it clears this)
}

Tensor Embedding::forward(const Tensor& ids, ops::EmbeddingCache* cache) const {
  Tensor y = ops::embedding_forward(ids, table.value, cache, padding_id_);
  if (cache && table.sparse_rows) announce_rows(table, ids);
  return y;
}

void Embedding::backward(const Tensor& dy, const ops::EmbeddingCache& cache) {
  ops::embedding_backward(dy, cache, table.grad);
  if (table.sparse_rows) announce_rows(table, cache.ids);
}

LayerNorm::LayerNorm(int64_t dim, const std::string& name, float eps)
    : gamma(name + "/gamma", Tensor::full({dim}, 1.0f)), beta(name + "/beta", Tensor({dim})), eps_(eps) {}

FeedForward::FeedForward(int64_t dim, int64_t hidden, ops::Activation activation,
                         const std::string& name, Rng& rng)
    : in(dim, hidden, name + "/in", rng), out(hidden, dim, name + "/out", rng), activation_(activation) {}

Tensor FeedForward::forward(const Tensor& x, float dropout, bool training, Rng& rng,
                            FeedForwardCache* cache) const {
  Tensor h = in.forward(x, cache ? &cache->in : nullptr);
  h = ops::activation_forward(h, activation_, cache ? &cache->act : nullptr);
  h = ops::dropout_forward(h, dropout, training, rng, cache ? &cache->drop : nullptr);
  return out.forward(h, cache ? &cache->out : nullptr);
}

Tensor FeedForward::backward(const Tensor& dy, const FeedForwardCache& cache) {
  Tensor dh = out.backward(dy, cache.out);
  dh = ops::dropout_backward(dh, cache.drop);
  dh = ops::activation_backward(dh, cache.act);
  return in.backward(dh, cache.in);
}

ParamList FeedForward::params() {
  ParamList list = in.params();
  append(list, out.params());
  return list;
}

}  // namespace attn::nn

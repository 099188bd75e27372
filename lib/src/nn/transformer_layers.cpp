// Encoder and decoder layers: the residual sub-layer wrapper (post- or pre-norm) around
// multi-head attention and the feed-forward network, forward, backward and the cached step.
#include "attn/nn/transformer_layers.hpp"

#include "attn/nn/grad_ready.hpp"
#include "attn/ops/elementwise.hpp"

namespace attn::nn {
namespace {

// The input of sub-layer f: LayerNorm(x) for pre-norm, x itself for post-norm.
Tensor sublayer_input(const Tensor& x, const nn::LayerNorm& ln, NormPosition norm, SublayerCache* c) {
  if (norm == NormPosition::pre) return ln.forward(x, c ? &c->norm : nullptr);
  return x;
}

// The wrapper's output from x and f's output fx (a fresh tensor, which is updated in place):
// post: LayerNorm(x + dropout(fx)), pre: x + dropout(fx).
Tensor sublayer_output(const Tensor& x, const Tensor& fx, const nn::LayerNorm& ln, const LayerOptions& o,
                       bool training, Rng& rng, SublayerCache* c) {
  Tensor y = ops::dropout_forward(fx, o.dropout, training, rng, c ? &c->drop : nullptr);
  ops::accumulate(y, x);
  if (o.norm == NormPosition::post) return ln.forward(y, c ? &c->norm : nullptr);
  return y;
}

// Backward of sublayer_output: returns the gradient w.r.t. fx and sets *dres to the residual
// path's share of dx (dy itself for pre-norm: it is read, never written).
Tensor sublayer_output_backward(const Tensor& dy, nn::LayerNorm& ln, NormPosition norm, const SublayerCache& c,
                                Tensor* dres) {
  *dres = norm == NormPosition::post ? ln.backward(dy, c.norm) : dy;
  return ops::dropout_backward(*dres, c.drop);
}

// Backward of sublayer_input given dfin, the gradient w.r.t. f's input (fresh, from f's
// backward): dx = dres + dfin (post) or dres + LayerNorm'(dfin) (pre), summed into a fresh
// tensor so that neither dy nor the residual share is written.
Tensor sublayer_input_backward(const Tensor& dres, const Tensor& dfin, nn::LayerNorm& ln, NormPosition norm,
                               const SublayerCache& c) {
  Tensor dx = norm == NormPosition::pre ? ln.backward(dfin, c.norm) : dfin;
  ops::accumulate(dx, dres);
  return dx;
}

// Inference never draws dropout masks; the layers still take an Rng by reference.
// These sublayers' gradients are final (nn/grad_ready.hpp): data-parallel training sends a
// layer's feed-forward part while the backward computes its attention.
template <class... Module>
void announce_final(Module&... modules) {
  ParamList list;
  (nn::append(list, modules.params()), ...);
  nn::announce_final(list);
}

Rng& unused_rng() {
  thread_local Rng rng(0);
  return rng;
}

}  // namespace

// ---- encoder layer ---------------------------------------------------------------------------

EncoderLayer::EncoderLayer(const LayerOptions& o, const std::string& name, Rng& rng)
    : self_attn(o.d_model, o.heads, name + "/self_attn", rng),
      norm1(o.d_model, name + "/norm1"),
      ffn(o.d_model, o.d_ff, ops::Activation::relu, name + "/ffn", rng),
      norm2(o.d_model, name + "/norm2"),
      options_(o) {}

ParamList EncoderLayer::params() {
  ParamList list = self_attn.params();
  nn::append(list, norm1.params());
  nn::append(list, ffn.params());
  nn::append(list, norm2.params());
  return list;
}

Tensor EncoderLayer::forward(const Tensor& x, const ops::AttentionMask& mask, bool training, Rng& rng,
                             Cache* cache, Tensor* weights) const {
  const NormPosition norm = options_.norm;
  const Tensor a_in = sublayer_input(x, norm1, norm, cache ? &cache->s_attn : nullptr);
  const Tensor a = self_attn.forward(a_in, a_in, a_in, mask, cache ? &cache->attn : nullptr, weights);
  const Tensor h = sublayer_output(x, a, norm1, options_, training, rng, cache ? &cache->s_attn : nullptr);
  const Tensor f_in = sublayer_input(h, norm2, norm, cache ? &cache->s_ffn : nullptr);
  const Tensor f = ffn.forward(f_in, options_.dropout, training, rng, cache ? &cache->ffn : nullptr);
  return sublayer_output(h, f, norm2, options_, training, rng, cache ? &cache->s_ffn : nullptr);
}

Tensor EncoderLayer::backward(const Tensor& dy, const Cache& cache) {
  const NormPosition norm = options_.norm;
  Tensor dres;
  Tensor df = sublayer_output_backward(dy, norm2, norm, cache.s_ffn, &dres);
  const Tensor dh = sublayer_input_backward(dres, ffn.backward(df, cache.ffn), norm2, norm, cache.s_ffn);
  announce_final(ffn, norm2);
  const Tensor da = sublayer_output_backward(dh, norm1, norm, cache.s_attn, &dres);
  const nn::MultiHeadAttentionGrads g = self_attn.backward(da, cache.attn);   // dk, dv folded into dquery
  return sublayer_input_backward(dres, g.dquery, norm1, norm, cache.s_attn);
}

// ---- decoder layer ---------------------------------------------------------------------------

DecoderLayer::DecoderLayer(const LayerOptions& o, bool cross_attention, const std::string& name, Rng& rng)
    : self_attn(o.d_model, o.heads, name + "/self_attn", rng),
      norm1(o.d_model, name + "/norm1"),
      norm2(o.d_model, name + "/norm2"),
      ffn(o.d_model, o.d_ff, ops::Activation::relu, name + "/ffn", rng),
      norm3(o.d_model, name + "/norm3"),
      options_(o) {
  // The cross-attention draws its initial weights last, so that the self-attention and the
  // feed-forward network get the same draws with or without it.
  if (cross_attention) cross_attn.emplace(o.d_model, o.heads, name + "/cross_attn", rng);
}

ParamList DecoderLayer::params() {
  ParamList list = self_attn.params();
  nn::append(list, norm1.params());
  if (cross_attn) {
    nn::append(list, cross_attn->params());
    nn::append(list, norm2.params());
  }
  nn::append(list, ffn.params());
  nn::append(list, norm3.params());
  return list;
}

Tensor DecoderLayer::forward(const Tensor& x, const Tensor& memory, const ops::AttentionMask& self_mask,
                             const ops::AttentionMask& cross_mask, bool training, Rng& rng, Cache* cache,
                             Tensor* self_weights, Tensor* cross_weights) const {
  const NormPosition norm = options_.norm;
  const Tensor a_in = sublayer_input(x, norm1, norm, cache ? &cache->s_self : nullptr);
  const Tensor a = self_attn.forward(a_in, a_in, a_in, self_mask, cache ? &cache->self : nullptr, self_weights);
  Tensor h = sublayer_output(x, a, norm1, options_, training, rng, cache ? &cache->s_self : nullptr);
  if (cross_attn) {
    const Tensor c_in = sublayer_input(h, norm2, norm, cache ? &cache->s_cross : nullptr);
    const Tensor c =
        cross_attn->forward(c_in, memory, memory, cross_mask, cache ? &cache->cross : nullptr, cross_weights);
    h = sublayer_output(h, c, norm2, options_, training, rng, cache ? &cache->s_cross : nullptr);
  }
  const Tensor f_in = sublayer_input(h, norm3, norm, cache ? &cache->s_ffn : nullptr);
  const Tensor f = ffn.forward(f_in, options_.dropout, training, rng, cache ? &cache->ffn : nullptr);
  return sublayer_output(h, f, norm3, options_, training, rng, cache ? &cache->s_ffn : nullptr);
}

DecoderLayer::Grads DecoderLayer::backward(const Tensor& dy, const Cache& cache) {
  const NormPosition norm = options_.norm;
  Grads out;
  Tensor dres;
  const Tensor df = sublayer_output_backward(dy, norm3, norm, cache.s_ffn, &dres);
  Tensor dh = sublayer_input_backward(dres, ffn.backward(df, cache.ffn), norm3, norm, cache.s_ffn);
  announce_final(ffn, norm3);
  if (cross_attn) {
    const Tensor dc = sublayer_output_backward(dh, norm2, norm, cache.s_cross, &dres);
    nn::MultiHeadAttentionGrads g = cross_attn->backward(dc, cache.cross);   // dvalue folded into dkey
    dh = sublayer_input_backward(dres, g.dquery, norm2, norm, cache.s_cross);
    announce_final(*cross_attn, norm2);
    out.dmemory = std::move(g.dkey);
  }
  const Tensor da = sublayer_output_backward(dh, norm1, norm, cache.s_self, &dres);
  const nn::MultiHeadAttentionGrads g = self_attn.backward(da, cache.self);
  out.dx = sublayer_input_backward(dres, g.dquery, norm1, norm, cache.s_self);
  return out;
}

Tensor DecoderLayer::step(const Tensor& x, nn::KVCache& self_kv, const nn::KVCache* cross_kv,
                          const ops::AttentionMask& self_mask, const ops::AttentionMask& cross_mask,
                          Tensor* self_weights, Tensor* cross_weights) const {
  const NormPosition norm = options_.norm;
  Rng& rng = unused_rng();
  const Tensor a_in = sublayer_input(x, norm1, norm, nullptr);
  self_attn.append_kv(a_in, a_in, self_kv);
  const Tensor a = self_attn.forward_cached(a_in, self_kv, self_mask, self_weights);
  Tensor h = sublayer_output(x, a, norm1, options_, /*training=*/false, rng, nullptr);
  if (cross_attn) {
    if (cross_kv == nullptr) throw Error("decoder layer step: cross-attention needs the projected memory");
    const Tensor c_in = sublayer_input(h, norm2, norm, nullptr);
    const Tensor c = cross_attn->forward_cached(c_in, *cross_kv, cross_mask, cross_weights);
    h = sublayer_output(h, c, norm2, options_, /*training=*/false, rng, nullptr);
  }
  const Tensor f_in = sublayer_input(h, norm3, norm, nullptr);
  const Tensor f = ffn.forward(f_in, 0.0f, /*training=*/false, rng, nullptr);
  return sublayer_output(h, f, norm3, options_, /*training=*/false, rng, nullptr);
}

}  // namespace attn::nn

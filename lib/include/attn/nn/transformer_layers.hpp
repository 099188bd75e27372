// The two layers of the Transformer (Vaswani et al. 2017, sec. 3.1, fig. 1), with their
// residual connections, layer norms and dropout, forward and backward:
//
//   encoder layer:  x -> self-attention -> feed-forward
//   decoder layer:  x -> masked self-attention -> cross-attention over the memory -> feed-forward
//                   (a decoder-only language model leaves out the cross-attention)
//
// Each sub-layer f is wrapped as
//   post-norm (the paper, sec. 5.4):  y = LayerNorm(x + dropout(f(x)))
//   pre-norm  (Xiong et al. 2020):    y = x + dropout(f(LayerNorm(x)))
// (a pre-norm stack ends with one more LayerNorm, owned by the model).
//
// Every projection inside is one GEMM over all B*T rows (nn::MultiHeadAttention,
// nn::FeedForward). The layers also run one decoding step at a time over a KV cache
// (DecoderLayer::step), where the self-attention keys of earlier positions are kept projected
// and the cross-attention keys are projected once per source sentence.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/layers.hpp"
#include "attn/nn/multi_head_attention.hpp"
#include "attn/ops/attention_mask.hpp"

namespace attn::nn {

enum class NormPosition { post, pre };   // post: LayerNorm(x + sublayer(x)) (paper)

// What backward needs of one residual sub-layer wrapper.
struct SublayerCache {
  ops::LayerNormCache norm;
  ops::DropoutCache drop;
};

// Hyper-parameters the layers share with the model.
struct LayerOptions {
  int64_t d_model = 0, heads = 0, d_ff = 0;
  float dropout = 0.0f;
  NormPosition norm = NormPosition::post;
};

class EncoderLayer {
 public:
  struct Cache {
    SublayerCache s_attn, s_ffn;
    nn::MultiHeadAttentionCache attn;
    nn::FeedForwardCache ffn;
  };

  // Params "<name>/self_attn/...", "<name>/norm1/...", "<name>/ffn/...", "<name>/norm2/...".
  EncoderLayer(const LayerOptions& options, const std::string& name, Rng& rng);
  ParamList params();

  // x: [B, S, D] -> [B, S, D]. `weights`, when not null, receives the self-attention weights
  // [B, NH, S, S]. cache nullptr for inference (then no dropout is drawn unless training).
  Tensor forward(const Tensor& x, const ops::AttentionMask& mask, bool training, Rng& rng, Cache* cache,
                 Tensor* weights = nullptr) const;
  // dy: [B, S, D]. Adds into every param's grad; returns dx [B, S, D] (new tensor).
  Tensor backward(const Tensor& dy, const Cache& cache);

  nn::MultiHeadAttention self_attn;
  nn::LayerNorm norm1;
  nn::FeedForward ffn;
  nn::LayerNorm norm2;

 private:
  LayerOptions options_;
};

class DecoderLayer {
 public:
  struct Cache {
    SublayerCache s_self, s_cross, s_ffn;
    nn::MultiHeadAttentionCache self, cross;
    nn::FeedForwardCache ffn;
  };
  struct Grads {
    Tensor dx;        // [B, T, D]
    Tensor dmemory;   // [B, S, D], empty without cross-attention
  };

  // Params "<name>/self_attn/...", "<name>/norm1/...", ["<name>/cross_attn/...",
  // "<name>/norm2/...",] "<name>/ffn/...", "<name>/norm3/...".
  DecoderLayer(const LayerOptions& options, bool cross_attention, const std::string& name, Rng& rng);
  ParamList params();
  bool has_cross_attention() const { return cross_attn.has_value(); }

  // x: [B, T, D], memory: [B, S, D] (ignored without cross-attention) -> [B, T, D].
  Tensor forward(const Tensor& x, const Tensor& memory, const ops::AttentionMask& self_mask,
                 const ops::AttentionMask& cross_mask, bool training, Rng& rng, Cache* cache,
                 Tensor* self_weights = nullptr, Tensor* cross_weights = nullptr) const;
  // dy: [B, T, D]. Adds into every param's grad; returns dx and dmemory (new tensors).
  Grads backward(const Tensor& dy, const Cache& cache);

  // Inference over a KV cache: x [B, Tn, D] holds the Tn newest positions. Appends their
  // self-attention keys/values to self_kv, then attends over positions [0, self_kv.length).
  // self_mask.query_offset must be self_kv.length - Tn after the append (the caller sets it).
  // cross_kv holds the projected memory (cross_attn->append_kv once per source batch).
  Tensor step(const Tensor& x, nn::KVCache& self_kv, const nn::KVCache* cross_kv,
              const ops::AttentionMask& self_mask, const ops::AttentionMask& cross_mask,
              Tensor* self_weights = nullptr, Tensor* cross_weights = nullptr) const;

  nn::MultiHeadAttention self_attn;
  nn::LayerNorm norm1;
  std::optional<nn::MultiHeadAttention> cross_attn;
  nn::LayerNorm norm2;   // unused (no params listed) without cross-attention
  nn::FeedForward ffn;
  nn::LayerNorm norm3;

 private:
  LayerOptions options_;
};

}  // namespace attn::nn

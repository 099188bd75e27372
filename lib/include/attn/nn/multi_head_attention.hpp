// nn::MultiHeadAttention (Vaswani et al. 2017, sec. 3.2.2):
//   MHA(Q, K, V) = concat(head_1..head_NH) W_o^T + b_o,
//   head_h = softmax(Q_h K_h^T / sqrt(HD) + mask) V_h,  Q = query W_q^T + b_q (K, V likewise)
// with d_model D = NH * HD (Q, K, V: the paper's matrices, not dimensions). The projections are
// one GEMM each over all B*T (or B*S) rows; the split into heads is fused with the bias add,
// and the heads run through the fused attention core (ops/attention_core.hpp), which streams
// over key blocks for long sequences.
//
// For decoding, a KV cache keeps the projected keys and values of earlier positions, so each
// step projects only its own position (forward_cached; see KVCache).
//
// Parameters, named "<name>/w_q" etc.: w_q, w_k, w_v, w_o [D, D] (y = x W^T + b, Glorot
// uniform) and b_q, b_k, b_v, b_o [D] (zeros).
//
// Self-attention passes the same tensor as query, key and value; cross-attention passes the
// encoder memory as both key and value. Backward detects such aliasing and sums the gradients:
// an input that is the same tensor as an earlier one gets an EMPTY gradient, its contribution
// being added into the earlier one's (self-attention: all of dx is in dquery; cross-attention:
// dmemory is in dkey). Summing an empty tensor fails loudly instead of double-counting.
#pragma once
#include <cstdint>
#include <string>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/param.hpp"
#include "attn/ops/attention_core.hpp"

namespace attn::nn {

struct MultiHeadAttentionCache {
  Tensor query, key, value;   // the inputs: [B, T, D], [B, S, D], [B, S, D]
  bool key_is_query = false;
  bool value_is_query = false;
  bool value_is_key = false;
  ops::AttentionCache core;   // holds the projected heads q [B, NH, T, HD], k, v [B, NH, S, HD]
  Tensor context;             // the merged heads [B, T, D], input of w_o
};

// Projected keys and values of the positions seen so far, for incremental decoding
// (inference only): self-attention appends one position per step, cross-attention appends the
// whole encoder memory once.
struct KVCache {
  Tensor k, v;   // [B, NH, capacity, HD]; positions [0, length) are filled
  int64_t length = 0;
  int64_t capacity() const { return k.dim(2); }
};

struct MultiHeadAttentionGrads {
  Tensor dquery;   // [B, T, D]
  Tensor dkey;     // [B, S, D], or empty when key is the query tensor
  Tensor dvalue;   // [B, S, D], or empty when value is the query or key tensor
};

class MultiHeadAttention {
 public:
  // d_model >= 1, heads >= 1 and d_model % heads == 0, else ConfigError.
  MultiHeadAttention(int64_t d_model, int64_t heads, const std::string& name, Rng& rng);

  int64_t d_model() const { return d_model_; }
  int64_t heads() const { return heads_; }
  ParamList params();

  // query: [B, T, D]   key, value: [B, S, D]   ->   [B, T, D] (new tensor).
  // `weights`, when not null, receives the attention weights [B, NH, T, S] (this forces the
  // materialised core path); the mask applies to every head.
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const ops::AttentionMask& mask,
                 MultiHeadAttentionCache* cache, Tensor* weights = nullptr,
                 const ops::AttentionOptions& options = {}) const;

  // dout: [B, T, D]. Adds into every parameter's grad; returns the input gradients (new
  // tensors, aliased inputs folded as described above).
  MultiHeadAttentionGrads backward(const Tensor& dout, const MultiHeadAttentionCache& cache);

  // Incremental decoding. An empty cache for `batch` sequences of up to `capacity` positions.
  KVCache new_kv_cache(int64_t batch, int64_t capacity) const;
  // key, value: [B, Tn, D]. Projects them and stores them at positions [length, length + Tn).
  void append_kv(const Tensor& key, const Tensor& value, KVCache& cache) const;
  // query: [B, T, D] over the cached positions [0, length) -> [B, T, D]. Query row t sits at
  // position mask.query_offset + t: after appending T new positions for causal self-attention,
  // pass query_offset = length - T. Equals `forward` over the same keys, without recomputing
  // the projections of earlier positions.
  Tensor forward_cached(const Tensor& query, const KVCache& cache, const ops::AttentionMask& mask,
                        Tensor* weights = nullptr) const;

  Param w_q, w_k, w_v, w_o;   // [D, D]
  Param b_q, b_k, b_v, b_o;   // [D]

 private:
  int64_t d_model_;
  int64_t heads_;
};

}  // namespace attn::nn

// nn::Attention: the attention layer of RNN encoder-decoders and captioners. At each decoder
// step one query q [B, Dq] scores the S source states, a masked softmax turns the scores into
// weights alpha [B, S], and the context is c = sum_j alpha_j v_j [B, Dv].
//
// Score functions e_j (Luong et al. 2015, sec. 3.1, whose names these are; Bahdanau et al.
// 2015, eq. 6):
//   dot         q . k_j                          (Dq == Dk, no parameters)
//   scaled-dot  q . k_j / sqrt(Dk)               (Vaswani et al. 2017)
//   general     q^T W k_j                        W: [Dq, Dk]            "<name>/W"
//   concat      v^T tanh(W q + U k_j)            W: [A, Dq], U: [A, Dk], v: [A]
//               (Bahdanau's additive score)
//                                                "<name>/W", "<name>/U", "<name>/v"
//   location    (W q)_j, j < S                   W: [max_len, Dq]       "<name>/W"
//
// Whatever depends only on the source is computed once per sequence by `prepare` (for additive
// attention U k, one GEMM over all B*S keys), so a step costs O(B S A) instead of O(B S A Dk).
// Backward mirrors this: each step's backward adds into an AttentionMemoryGrad, and
// `backward_memory` folds the accumulated gradient of U k through U once at the end.
//
// Masks (ops/attention_mask.hpp) apply with the step's query at `position`: padding masks
// source positions past each length, causal masks keys j > position, and a window of radius P
// keeps |position - j| <= P (Luong's local-m attention).
#pragma once
#include <cstdint>
#include <string>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/param.hpp"
#include "attn/ops/attention_mask.hpp"

namespace attn::nn {

// The one enumeration of attention scores. `none` is no attention at all (a model's option, e.g.
// the seq2seq baseline); an Attention layer cannot be made with it.
enum class ScoreKind : uint8_t { none, dot, scaled_dot, general, concat, location };

// "none", "dot", "scaled-dot", "general", "concat", "location" (the tools' option values);
// parsing anything else throws ConfigError listing them.
ScoreKind parse_score_kind(const std::string& name);
const char* score_kind_name(ScoreKind kind);

struct AttentionConfig {
  ScoreKind score = ScoreKind::general;
  int64_t query_dim = 0;    // Dq
  int64_t key_dim = 0;      // Dk
  int64_t hidden_dim = 0;   // A: additive only
  int64_t max_len = 0;      // location only: the longest source S
};

// One sequence batch's source side, made by Attention::prepare.
struct AttentionMemory {
  Tensor keys;               // [B, S, Dk]
  Tensor values;             // [B, S, Dv]  (often the same tensor as keys)
  Tensor projected_keys;     // additive: U k [B, S, A]; empty otherwise
  ops::AttentionMask mask;   // key_lengths [B], causal, window, keep [B or 1, 1, S]
  bool values_are_keys = false;
};

// Gradients accumulated over all steps that used one AttentionMemory. When the values are the
// same tensor as the keys, dvalues stays empty and their gradient is added into dkeys.
struct AttentionMemoryGrad {
  Tensor dkeys;             // [B, S, Dk]
  Tensor dvalues;           // [B, S, Dv] or empty
  Tensor dprojected_keys;   // additive: [B, S, A]; folded into dkeys by backward_memory
};

// What one step's backward needs.
struct AttentionStepCache {
  Tensor query;     // [B, Dq]
  Tensor weights;   // alpha [B, S]
  Tensor u;         // general: q W [B, Dk]
  Tensor hidden;    // additive: tanh(W q + U k) [B, S, A]
};

struct AttentionStep {
  Tensor context;   // [B, Dv]
  Tensor weights;   // [B, S]: rows sum to 1 over visible keys, exact zeros elsewhere
};

class Attention {
 public:
  // Checks the config (ConfigError) and initialises W, U (Glorot uniform) and v.
  Attention(const AttentionConfig& config, const std::string& name, Rng& rng);

  const AttentionConfig& config() const { return config_; }
  ParamList params();

  // keys: [B, S, Dk]   values: [B, S, Dv]. Precomputes U k for additive attention.
  AttentionMemory prepare(const Tensor& keys, const Tensor& values, ops::AttentionMask mask = {}) const;

  // query: [B, Dq] at decoder step `position` -> context [B, Dv] and weights [B, S].
  AttentionStep forward(const Tensor& query, const AttentionMemory& memory, int64_t position,
                        AttentionStepCache* cache) const;

  // Unmasked scores e [B, S] (the input of the softmax), for inspection and tests.
  Tensor scores(const Tensor& query, const AttentionMemory& memory,
                AttentionStepCache* cache = nullptr) const;

  // Zeroed gradient buffers for `memory`, to pass to every step's backward.
  AttentionMemoryGrad begin_backward(const AttentionMemory& memory) const;

  // dcontext: [B, Dv]; dweights: optional [B, S] (e.g. a coverage or alignment loss).
  // Adds into the parameter grads and into `grad`; returns dquery [B, Dq] (new tensor).
  Tensor backward(const Tensor& dcontext, const AttentionStepCache& cache, const AttentionMemory& memory,
                  AttentionMemoryGrad& grad, const Tensor& dweights = Tensor());

  // After the last step's backward: dU += dUk^T k and dkeys += dUk U (additive attention; a
  // no-op otherwise). Clears grad.dprojected_keys so a second call adds nothing.
  void backward_memory(const AttentionMemory& memory, AttentionMemoryGrad& grad);

  Param W;   // general [Dq, Dk], additive [A, Dq], location [max_len, Dq]; unused otherwise
  Param U;   // additive [A, Dk]
  Param v;   // additive [A]

 private:
  void check_query(const Tensor& query, const AttentionMemory& memory) const;
  AttentionConfig config_;
};

}  // namespace attn::nn

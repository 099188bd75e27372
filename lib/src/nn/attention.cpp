// nn::Attention: RNN-style attention with dot, scaled-dot, general, additive and location
// scores. Every product is one GEMM over the batch (batched for per-example products).
#include "attn/nn/attention.hpp"

#include <cmath>

#include "attn/blas/blas.hpp"
#include "attn/core/enum_names.hpp"
#include "attn/nn/init.hpp"
#include "attn/ops/additive_score.hpp"
#include "attn/ops/attention_context.hpp"
#include "attn/ops/attention_core.hpp"

namespace attn::nn {
namespace {

using blas::Trans;

// Factor of the dot-product scores.
float dot_scale(ScoreKind kind, int64_t Dk) {
  return kind == ScoreKind::scaled_dot ? 1.0f / std::sqrt(static_cast<float>(Dk)) : 1.0f;
}

}  // namespace

namespace {
constexpr EnumNames<ScoreKind, 6> kScoreNames{{{ScoreKind::none, "none"},
                                               {ScoreKind::dot, "dot"},
                                               {ScoreKind::scaled_dot, "scaled-dot"},
                                               {ScoreKind::general, "general"},
                                               {ScoreKind::concat, "concat"},
                                               {ScoreKind::location, "location"}}};
}  // namespace

ScoreKind parse_score_kind(const std::string& name) { return parse_enum(kScoreNames, "attention score", name); }
const char* score_kind_name(ScoreKind kind) { return enum_name(kScoreNames, kind); }


Attention::Attention(const AttentionConfig& config, const std::string& name, Rng& rng) : config_(config) {
  const std::string what = std::string("attention (") + score_kind_name(config.score) + "): ";
  if (config.query_dim < 1 || config.key_dim < 1)
    throw ConfigError(what + "query_dim and key_dim must be >= 1, got " + std::to_string(config.query_dim) +
                      " and " + std::to_string(config.key_dim));
  const int64_t Dq = config.query_dim, Dk = config.key_dim, A = config.hidden_dim;
  switch (config.score) {
    case ScoreKind::dot:
    case ScoreKind::scaled_dot:
      if (Dq != Dk)
        throw ConfigError(what + "query_dim " + std::to_string(Dq) + " must equal key_dim " +
                          std::to_string(Dk) + " (use general or concat scores for different widths)");
      break;
    case ScoreKind::none:
      throw ConfigError(what + "an attention layer needs a score function, not 'none'");
    case ScoreKind::general: W = Param(name + "/W", glorot_uniform({Dq, Dk}, rng)); break;
    case ScoreKind::concat: {
      if (A < 1) throw ConfigError(what + "hidden_dim must be >= 1, got " + std::to_string(A));
      W = Param(name + "/W", glorot_uniform({A, Dq}, rng));
      U = Param(name + "/U", glorot_uniform({A, Dk}, rng));
      const float bound = 1.0f / std::sqrt(static_cast<float>(A));
      v = Param(name + "/v", rand_uniform({A}, rng, -bound, bound));
      break;
    }
    case ScoreKind::location:
      if (config.max_len < 1)
        throw ConfigError(what + "max_len must be >= 1, got " + std::to_string(config.max_len));
      W = Param(name + "/W", glorot_uniform({config.max_len, Dq}, rng));
      break;
  }
}

ParamList Attention::params() {
  ParamList out;
  for (Param* p : {&W, &U, &v})
    if (p->value.defined()) out.push_back(p);
  return out;
}

AttentionMemory Attention::prepare(const Tensor& keys, const Tensor& values, ops::AttentionMask mask) const {
  check_tensor(keys, {kAny, kAny, config_.key_dim}, "attention: keys [B, S, Dk]");
  const int64_t B = keys.dim(0), S = keys.dim(1);
  check_tensor(values, {B, S, kAny}, "attention: values [B, S, Dv]");
  if (config_.score == ScoreKind::location && S > config_.max_len)
    throw ShapeError("attention (location): source length S = " + std::to_string(S) +
                     " exceeds max_len = " + std::to_string(config_.max_len));
  ops::check_attention_mask(mask, B, 1, S, "attention");
  AttentionMemory m{keys, values, Tensor(), std::move(mask), keys.is_same(values)};
  if (config_.score == ScoreKind::concat) {
    const int64_t A = config_.hidden_dim, Dk = config_.key_dim;
    m.projected_keys = Tensor({B, S, A});
    // U k: [B*S, A] = keys [B*S, Dk] U^T
    blas::gemm(Trans::N, Trans::T, B * S, A, Dk, 1.0f, keys.data(), Dk, U.value.data(), Dk, 0.0f,
               m.projected_keys.data(), A);
  }
  return m;
}

void Attention::check_query(const Tensor& query, const AttentionMemory& memory) const {
  check_tensor(query, {memory.keys.dim(0), config_.query_dim}, "attention: query [B, Dq]");
}

Tensor Attention::scores(const Tensor& query, const AttentionMemory& memory,
                         AttentionStepCache* cache) const {
  check_query(query, memory);
  const Tensor& keys = memory.keys;
  const int64_t B = keys.dim(0), S = keys.dim(1), Dk = keys.dim(2), Dq = config_.query_dim;
  Tensor e({B, S});
  switch (config_.score) {
    case ScoreKind::dot:
    case ScoreKind::scaled_dot:
      // e[b] = scale * keys[b] q[b] : [S]
      blas::gemm_strided_batched(Trans::N, Trans::N, S, 1, Dk, dot_scale(config_.score, Dk), keys.data(), Dk,
                                 S * Dk, query.data(), 1, Dq, 0.0f, e.data(), 1, S, B);
      break;
    case ScoreKind::general: {
      Tensor u({B, Dk});   // u = q W : [B, Dk], then e[b] = keys[b] u[b]
      blas::gemm(Trans::N, Trans::N, B, Dk, Dq, 1.0f, query.data(), Dq, W.value.data(), Dk, 0.0f, u.data(),
                 Dk);
      blas::gemm_strided_batched(Trans::N, Trans::N, S, 1, Dk, 1.0f, keys.data(), Dk, S * Dk, u.data(), 1, Dk,
                                 0.0f, e.data(), 1, S, B);
      if (cache != nullptr) cache->u = u;
      break;
    }
    case ScoreKind::concat: {
      const int64_t A = config_.hidden_dim;
      Tensor wq = Tensor::uninitialized({B, A});   // W q : [B, A]
      blas::gemm(Trans::N, Trans::T, B, A, Dq, 1.0f, query.data(), Dq, W.value.data(), Dq, 0.0f, wq.data(),
                 A);
      // hidden = tanh(U k + W q) and e = hidden v in one pass over [B*S, A] (ops/additive_score.hpp).
      Tensor hidden = Tensor::uninitialized({B, S, A});
      ops::additive_scores(memory.projected_keys.data(), wq.data(), v.value.data(), B, S, A, hidden.data(),
                           e.data());
      if (cache != nullptr) cache->hidden = hidden;
      break;
    }
    case ScoreKind::location:
      // e = q W[:S]^T : [B, S]
      blas::gemm(Trans::N, Trans::T, B, S, Dq, 1.0f, query.data(), Dq, W.value.data(), Dq, 0.0f, e.data(), S);
      break;
    case ScoreKind::none: break;   // refused by the constructor
  }
  return e;
}

AttentionStep Attention::forward(const Tensor& query, const AttentionMemory& memory, int64_t position,
                                 AttentionStepCache* cache) const {
  if (position < 0) throw ConfigError("attention: position must be >= 0, got " + std::to_string(position));
  Tensor alpha = scores(query, memory, cache);
  const int64_t B = alpha.dim(0), S = alpha.dim(1), Dv = memory.values.dim(2);
  ops::AttentionMask mask = memory.mask;
  mask.query_offset = position;
  Tensor view = alpha.reshape({B, 1, 1, S});
  ops::masked_softmax_inplace(view, mask);
  Tensor context({B, Dv});
  // c[b] = alpha[b] values[b] : [Dv]
  blas::gemm_strided_batched(Trans::N, Trans::N, 1, Dv, S, 1.0f, alpha.data(), S, S, memory.values.data(), Dv,
                             S * Dv, 0.0f, context.data(), Dv, Dv, B);
  if (cache != nullptr) {
    cache->query = query;
    cache->weights = alpha;
  }
  return {context, alpha};
}

AttentionMemoryGrad Attention::begin_backward(const AttentionMemory& memory) const {
  AttentionMemoryGrad g;
  g.dkeys = zeros_like(memory.keys);
  if (!memory.values_are_keys) g.dvalues = zeros_like(memory.values);
  if (config_.score == ScoreKind::concat) g.dprojected_keys = zeros_like(memory.projected_keys);
  return g;
}

Tensor Attention::backward(const Tensor& dcontext, const AttentionStepCache& cache,
                           const AttentionMemory& memory, AttentionMemoryGrad& grad, const Tensor& dweights) {
  const Tensor& keys = memory.keys;
  const Tensor& values = memory.values;
  const int64_t B = keys.dim(0), S = keys.dim(1), Dk = keys.dim(2), Dv = values.dim(2);
  const int64_t Dq = config_.query_dim;
  check_tensor(dcontext, {B, Dv}, "attention backward: dcontext [B, Dv]");
  check_tensor(grad.dkeys, keys.shape(), "attention backward: grad.dkeys [B, S, Dk]");
  Tensor& dvalues = memory.values_are_keys ? grad.dkeys : grad.dvalues;
  check_tensor(dvalues, values.shape(), "attention backward: grad.dvalues [B, S, Dv]");
  const float* alpha = cache.weights.data();

  Tensor de({B, S});
  if (dweights.defined() && !dweights.empty()) {
    check_tensor(dweights, {B, S}, "attention backward: dweights [B, S]");
    de.copy_from(dweights);
  }
  // dalpha[b] += values[b] dc[b] : [S];   dvalues[b] += alpha[b]^T dc[b] : [S, Dv]
  ops::attention_context_backward(values.data(), alpha, dcontext.data(), B, S, Dv, de.data(), dvalues.data());
  ops::masked_softmax_backward_inplace(de, cache.weights);   // de = dL/de (0 on masked keys)

  Tensor dq({B, Dq});
  const float* q = cache.query.data();
  switch (config_.score) {
    case ScoreKind::dot:
    case ScoreKind::scaled_dot: {
      const float s = dot_scale(config_.score, Dk);
      // dq[b] = s de[b] keys[b];   dkeys[b] += s de[b]^T q[b]
      blas::gemm_strided_batched(Trans::N, Trans::N, 1, Dk, S, s, de.data(), S, S, keys.data(), Dk, S * Dk,
                                 0.0f, dq.data(), Dk, Dk, B);
      blas::gemm_strided_batched(Trans::T, Trans::N, S, Dk, 1, s, de.data(), S, S, q, Dk, Dq, 1.0f,
                                 grad.dkeys.data(), Dk, S * Dk, B);
      break;
    }
    case ScoreKind::general: {
      Tensor du({B, Dk});   // du[b] = de[b] keys[b];  dkeys[b] += de[b]^T u[b]
      blas::gemm_strided_batched(Trans::N, Trans::N, 1, Dk, S, 1.0f, de.data(), S, S, keys.data(), Dk, S * Dk,
                                 0.0f, du.data(), Dk, Dk, B);
      blas::gemm_strided_batched(Trans::T, Trans::N, S, Dk, 1, 1.0f, de.data(), S, S, cache.u.data(), Dk, Dk,
                                 1.0f, grad.dkeys.data(), Dk, S * Dk, B);
      // u = q W:  dq = du W^T,  dW += q^T du
      blas::gemm(Trans::N, Trans::T, B, Dq, Dk, 1.0f, du.data(), Dk, W.value.data(), Dk, 0.0f, dq.data(), Dq);
      blas::gemm(Trans::T, Trans::N, Dq, Dk, B, 1.0f, q, Dq, du.data(), Dk, 1.0f, W.grad.data(), Dk);
      break;
    }
    case ScoreKind::concat: {
      const int64_t A = config_.hidden_dim;
      check_tensor(grad.dprojected_keys, {B, S, A},
                   "attention backward: grad.dprojected_keys [B, S, A] (from begin_backward)");
      // e = hidden v:  dv += hidden^T de;  dpre = de v (1 - hidden^2), added into dUk; dwq[b] = sum_s dpre[b, s]
      Tensor dwq = Tensor::uninitialized({B, A});
      ops::additive_scores_backward(cache.hidden.data(), de.data(), v.value.data(), B, S, A,
                                    grad.dprojected_keys.data(), dwq.data(), v.grad.data());
      // wq = q W^T:  dq = dwq W,  dW += dwq^T q
      blas::gemm(Trans::N, Trans::N, B, Dq, A, 1.0f, dwq.data(), A, W.value.data(), Dq, 0.0f, dq.data(), Dq);
      blas::gemm(Trans::T, Trans::N, A, Dq, B, 1.0f, dwq.data(), A, q, Dq, 1.0f, W.grad.data(), Dq);
      break;
    }
    case ScoreKind::location:
      // e = q W[:S]^T:  dq = de W[:S],  dW[:S] += de^T q
      blas::gemm(Trans::N, Trans::N, B, Dq, S, 1.0f, de.data(), S, W.value.data(), Dq, 0.0f, dq.data(), Dq);
      blas::gemm(Trans::T, Trans::N, S, Dq, B, 1.0f, de.data(), S, q, Dq, 1.0f, W.grad.data(), Dq);
      break;
    case ScoreKind::none: break;   // refused by the constructor
  }
  return dq;
}

void Attention::backward_memory(const AttentionMemory& memory, AttentionMemoryGrad& grad) {
  if (config_.score != ScoreKind::concat) return;
  const Tensor& keys = memory.keys;
  const int64_t BS = keys.dim(0) * keys.dim(1), Dk = keys.dim(2), A = config_.hidden_dim;
  check_tensor(grad.dprojected_keys, memory.projected_keys.shape(),
               "attention backward: grad.dprojected_keys [B, S, A]");
  const float* duk = grad.dprojected_keys.data();
  // Uk = keys U^T:  dU += dUk^T keys,  dkeys += dUk U
  blas::gemm(Trans::T, Trans::N, A, Dk, BS, 1.0f, duk, A, keys.data(), Dk, 1.0f, U.grad.data(), Dk);
  blas::gemm(Trans::N, Trans::N, BS, Dk, A, 1.0f, duk, A, U.value.data(), Dk, 1.0f, grad.dkeys.data(), Dk);
  grad.dprojected_keys.zero();
}

}  // namespace attn::nn

// nn::AttentionDecoder: the attention RNN decoder step (Bahdanau and Luong orders, local-m and
// local-p windows, the optional context gate), its backward, and the gathers of beam search.
#include "attn/nn/attention_decoder.hpp"

#include <cmath>
#include <cstring>

#include "attn/blas/blas.hpp"
#include "attn/nn/init.hpp"
#include "attn/ops/activation.hpp"
#include "attn/ops/attention_context.hpp"
#include "attn/ops/rows.hpp"

namespace attn::nn {
namespace {

using blas::Trans;

using ops::add_into;
using ops::copy_rows;

// Local-p's Gaussian width sigma = P / 2, P the window radius (Luong et al. 2015, eq. 10: D / 2).
float local_sigma(int64_t window) { return static_cast<float>(window) / 2.0f; }

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError("attention decoder: " + message);
}

}  // namespace

// ---- construction ------------------------------------------------------------------------------

AttentionDecoder::AttentionDecoder(const AttentionDecoderConfig& config, const std::string& name, Rng& rng)
    : config_(config) {
  const AttentionDecoderConfig& c = config_;
  require(c.input_dim >= 1, "input_dim must be >= 1, got " + std::to_string(c.input_dim));
  require(c.hidden >= 1, "hidden must be >= 1, got " + std::to_string(c.hidden));
  const bool attends = c.score != ScoreKind::none;
  if (attends) require(c.memory_dim >= 1, "memory_dim must be >= 1, got " + std::to_string(c.memory_dim));
  if (c.local != LocalAttention::global) {
    require(attends, "local attention needs an attention score");
    require(c.window >= 1, "window must be >= 1 with local attention, got " + std::to_string(c.window));
  }
  if (c.local == LocalAttention::local_p)
    require(c.attention_dim >= 1, "attention_dim must be >= 1 with local_p, got " + std::to_string(c.attention_dim));
  require(!c.gate || attends, "the context gate needs an attention score");

  const int64_t E = c.input_dim, Dd = c.hidden, Dc = c.context_dim();
  const int64_t extra = c.style == AttentionStyle::bahdanau ? Dc : Dd;   // [x; c] or [x; h~]
  rnn_ = Rnn(c.cell, E + extra, Dd, name + "/rnn", rng);
  if (attends)
    attention_ = std::make_unique<Attention>(AttentionConfig{c.score, Dd, c.memory_dim, c.attention_dim, c.max_len},
                                             name + "/attention", rng);
  if (c.local == LocalAttention::local_p) {
    const int64_t A = c.attention_dim;
    local_W_ = Param(name + "/local_p/W", glorot_uniform({A, Dd}, rng));
    const float bound = 1.0f / std::sqrt(static_cast<float>(A));
    local_v_ = Param(name + "/local_p/v", rand_uniform({A}, rng, -bound, bound));
  }
  if (c.style == AttentionStyle::luong) combine_ = Linear(Dc + Dd, Dd, name + "/combine", rng, /*bias=*/false);
  if (c.gate) gate_ = Linear(Dd, 1, name + "/gate", rng);
}

ParamList AttentionDecoder::params() {
  ParamList list = rnn_.params();
  if (attention_) append(list, attention_->params());
  if (local_W_.value.defined()) append(list, {&local_W_, &local_v_});
  if (combine_.W.value.defined()) append(list, combine_.params());
  if (gate_.W.value.defined()) append(list, gate_.params());
  return list;
}

// ---- once per sequence -------------------------------------------------------------------------

AttentionMemory AttentionDecoder::prepare(const Tensor& memory, const Tensor& lengths) const {
  if (!attention_) return {};
  check_tensor(memory, {kAny, kAny, config_.memory_dim}, "attention decoder: memory [B, S, Dv]");
  ops::AttentionMask mask = lengths.defined() ? ops::AttentionMask::padding(lengths) : ops::AttentionMask::none();
  if (config_.local == LocalAttention::local_m) mask.window = config_.window;
  AttentionMemory m = attention_->prepare(memory, memory, mask);
  if (config_.local == LocalAttention::local_p) m.mask.keep = Tensor({memory.dim(0), 1, memory.dim(1)}, DType::i32);
  return m;
}

AttentionDecoderState AttentionDecoder::initial_state(const Tensor& h0, const Tensor& c0) const {
  const int64_t Dd = config_.hidden;
  check_tensor(h0, {kAny, Dd}, "attention decoder: h0 [B, Dd]");
  const int64_t B = h0.dim(0);
  AttentionDecoderState st;
  st.s = rnn_.zero_state(B);
  st.s.h = h0;
  if (c0.defined() && rnn_.cell() == RnnCell::lstm) {
    check_tensor(c0, {B, Dd}, "attention decoder: c0 [B, Dd]");
    st.s.c = c0;
  }
  st.gx = Tensor({B, rnn_.gates()});
  if (config_.style == AttentionStyle::luong) {
    st.feed = Tensor({B, Dd});
    st.cs = Tensor({B, config_.context_dim() + Dd});
  }
  return st;
}

AttentionDecoderCache AttentionDecoder::make_cache(int64_t T, int64_t B) const {
  AttentionDecoderCache cache;
  cache.T = T;
  cache.B = B;
  cache.steps.assign(static_cast<size_t>(T), {});
  if (config_.style == AttentionStyle::luong) cache.cs = Tensor({T * B, config_.context_dim() + config_.hidden});
  return cache;
}

void AttentionDecoder::project_input(const float* x, int64_t ldx, int64_t N, float* gx) const {
  rnn_.project(x, ldx, N, /*col=*/0, config_.input_dim, /*with_bias=*/true, 0.0f, gx);
}

// ---- the step ----------------------------------------------------------------------------------

// c_t, a_t = attend(q) at step t, with local_p's predicted position and the gate.
void AttentionDecoder::attend(int64_t t, const Tensor& q, AttentionMemory& memory, AttentionDecoderStepCache* cache,
                              Tensor& ctx, Tensor& weights) const {
  const AttentionDecoderConfig& c = config_;
  const int64_t B = q.dim(0), Dq = q.dim(1);
  if (c.local != LocalAttention::local_p) {
    const AttentionStep a = attention_->forward(q, memory, t, cache ? &cache->attn : nullptr);
    ctx = a.context;
    weights = a.weights;
    if (cache != nullptr) cache->weights = weights;
  } else {
    const Tensor& mem = memory.values;
    const int64_t A = c.attention_dim, S = mem.dim(1), Dv = mem.dim(2);
    // zp = tanh(W_p q) [B, A];  p_t = S_b sigmoid(v_p . zp)
    Tensor zp({B, A});
    blas::gemm(Trans::N, Trans::T, B, A, Dq, 1.0f, q.data(), Dq, local_W_.value.data(), Dq, 0.0f, zp.data(), A);
    for (float& z : zp.values()) z = std::tanh(z);
    Tensor sig({B}), pos({B});
    blas::gemv(Trans::N, B, A, 1.0f, zp.data(), A, local_v_.value.data(), 0.0f, sig.data());
    const int32_t* len = memory.mask.key_lengths.defined() ? memory.mask.key_lengths.idata() : nullptr;
    const float D = static_cast<float>(c.window);
    int32_t* keep = memory.mask.keep.idata();
    for (int64_t b = 0; b < B; ++b) {
      const float s = ops::sigmoid(sig.at(b));
      sig.at(b) = s;
      pos.at(b) = static_cast<float>(len ? len[b] : S) * s;
      for (int64_t j = 0; j < S; ++j) keep[b * S + j] = std::fabs(static_cast<float>(j) - pos.at(b)) <= D ? 1 : 0;
    }
    const AttentionStep a = attention_->forward(q, memory, t, cache ? &cache->attn : nullptr);
    Tensor gauss({B, S});
    weights = Tensor({B, S});
    const float inv2s2 = 1.0f / (2.0f * local_sigma(c.window) * local_sigma(c.window));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < S; ++j) {
        const float d = static_cast<float>(j) - pos.at(b);
        gauss.at(b * S + j) = std::exp(-d * d * inv2s2);
        weights.at(b * S + j) = a.weights.at(b * S + j) * gauss.at(b * S + j);
      }
    // c[b] = w[b] memory[b] : [Dv]
    ctx = Tensor({B, Dv});
    blas::gemm_strided_batched(Trans::N, Trans::N, 1, Dv, S, 1.0f, weights.data(), S, S, mem.data(), Dv, S * Dv,
                               0.0f, ctx.data(), Dv, Dv, B);
    if (cache != nullptr) {
      cache->zp = zp;
      cache->sig = sig;
      cache->pos = pos;
      cache->gauss = gauss;
      cache->weights = weights;
    }
  }
  if (!c.gate) return;
  // beta = sigmoid(w_b . q + b_b) [B];  c <- beta c (a new tensor: the cache keeps c)
  const int64_t Dv = ctx.dim(1);
  Tensor beta({B});
  blas::gemv(Trans::N, B, Dq, 1.0f, q.data(), Dq, gate_.W.value.data(), 0.0f, beta.data());
  Tensor gated({B, Dv});
  for (int64_t b = 0; b < B; ++b) {
    const float s = ops::sigmoid(beta.at(b) + gate_.b.value.at(0));
    beta.at(b) = s;
    for (int64_t i = 0; i < Dv; ++i) gated.at(b * Dv + i) = s * ctx.at(b * Dv + i);
  }
  if (cache != nullptr) {
    cache->context = ctx;
    cache->beta = beta;
  }
  ctx = gated;
}

Tensor AttentionDecoder::step(int64_t t, const float* gx, AttentionDecoderState& st, AttentionMemory& memory, float* o,
                              int64_t ldo, AttentionDecoderCache* cache) const {
  const AttentionDecoderConfig& c = config_;
  const int64_t B = st.rows(), E = c.input_dim, Dd = c.hidden, Dv = c.context_dim(), G = rnn_.gates();
  if (ldo < c.output_dim())
    throw ShapeError("attention decoder: o's row stride " + std::to_string(ldo) + " is below o_t's width " +
                     std::to_string(c.output_dim()));
  if (cache != nullptr && (t < 0 || t >= cache->T || B != cache->B))
    throw ShapeError("attention decoder: step " + std::to_string(t) + " of " + std::to_string(B) +
                     " rows does not fit a cache of " + std::to_string(cache->T) + " steps of " +
                     std::to_string(cache->B) + " rows");
  if (attention_ && memory.keys.dim(0) != B)
    throw ShapeError("attention decoder: the memory has " + std::to_string(memory.keys.dim(0)) + " rows, the state " +
                     std::to_string(B));
  std::memcpy(st.gx.data(), gx, static_cast<size_t>(B * G) * sizeof(float));
  AttentionDecoderStepCache* sc = cache ? &cache->steps[static_cast<size_t>(t)] : nullptr;
  RnnStepCache* rc = sc ? &sc->rnn : nullptr;
  Tensor ctx, weights;
  if (c.style == AttentionStyle::bahdanau) {
    // c_t from s_{t-1};  s_t = RNN([x_t; c_t], s_{t-1});  o_t = [s_t; c_t]
    if (attention_) {
      attend(t, st.s.h, memory, sc, ctx, weights);
      rnn_.project(ctx.data(), Dv, B, /*col=*/E, Dv, /*with_bias=*/false, 1.0f, st.gx.data());
    }
    st.s = rnn_.step(st.gx, st.s, rc);
    copy_rows(st.s.h.data(), Dd, o, ldo, B, Dd);
    if (attention_) copy_rows(ctx.data(), Dv, o + Dd, ldo, B, Dv);
  } else {
    // s_t = RNN([x_t; h~_{t-1}], s_{t-1});  c_t from s_t;  o_t = h~_t = tanh(W_c [c_t; s_t])
    float* cs = cache ? cache->cs.data() + t * B * (Dv + Dd) : st.cs.data();
    rnn_.project(st.feed.data(), Dd, B, /*col=*/E, Dd, /*with_bias=*/false, 1.0f, st.gx.data());
    st.s = rnn_.step(st.gx, st.s, rc);
    if (attention_) {
      attend(t, st.s.h, memory, sc, ctx, weights);
      copy_rows(ctx.data(), Dv, cs, Dv + Dd, B, Dv);
    }
    copy_rows(st.s.h.data(), Dd, cs + Dv, Dv + Dd, B, Dd);
    blas::gemm(Trans::N, Trans::T, B, Dd, Dv + Dd, 1.0f, cs, Dv + Dd, combine_.W.value.data(), Dv + Dd, 0.0f, o,
               ldo);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < Dd; ++i) o[b * ldo + i] = std::tanh(o[b * ldo + i]);
    copy_rows(o, ldo, st.feed.data(), Dd, B, Dd);
  }
  return weights;
}

// ---- backward ----------------------------------------------------------------------------------

AttentionDecoderGrad AttentionDecoder::begin_backward(const AttentionMemory& memory, int64_t T, int64_t B) const {
  AttentionDecoderGrad g;
  g.T = T;
  g.B = B;
  if (attention_) g.memory = attention_->begin_backward(memory);
  g.dstate = rnn_.zero_state(B);
  g.dgx = Tensor({T * B, rnn_.gates()});
  if (config_.style == AttentionStyle::luong) {
    g.dpre = Tensor({T * B, config_.hidden});
    g.dfeed = Tensor({B, config_.hidden});
  }
  return g;
}

// dctx: [B, Dc] the gradient of the (gated) context -> dq [B, Dd]; adds into the attention's,
// local_p's and the gate's grads and into `grad`.
Tensor AttentionDecoder::attend_backward(const Tensor& dctx, const AttentionDecoderStepCache& cache,
                                         const AttentionMemory& memory, AttentionMemoryGrad& grad,
                                         const Tensor& dweights) {
  const AttentionDecoderConfig& c = config_;
  const Tensor& q = cache.attn.query;
  const int64_t B = dctx.dim(0), Dq = q.dim(1);
  Tensor dc = dctx, dz;
  if (c.gate) {
    // c' = beta c:  dbeta = dc' . c,  dc = beta dc';  beta = sigmoid(z): dz = dbeta beta (1 - beta)
    const int64_t Dv = dctx.dim(1);
    dc = Tensor({B, Dv});
    dz = Tensor({B});
    for (int64_t b = 0; b < B; ++b) {
      const float s = cache.beta.at(b);
      float dbeta = 0.0f;
      for (int64_t i = 0; i < Dv; ++i) {
        dbeta += dctx.at(b * Dv + i) * cache.context.at(b * Dv + i);
        dc.at(b * Dv + i) = s * dctx.at(b * Dv + i);
      }
      dz.at(b) = dbeta * s * (1.0f - s);
    }
    // z = q w_b + b_b:  dw_b += dz^T q,  db_b += sum dz  (dq += dz w_b below)
    blas::gemv(Trans::T, B, Dq, 1.0f, q.data(), Dq, dz.data(), 1.0f, gate_.W.grad.data());
    for (int64_t b = 0; b < B; ++b) gate_.b.grad.at(0) += dz.at(b);
  }
  Tensor dq;
  if (c.local != LocalAttention::local_p) {
    dq = attention_->backward(dc, cache.attn, memory, grad, dweights);
  } else {
    const Tensor& mem = memory.values;
    Tensor& dmem = memory.values_are_keys ? grad.dkeys : grad.dvalues;
    const int64_t S = mem.dim(1), Dv = mem.dim(2), A = c.attention_dim;
    // c = w memory:  dw[b] = memory[b] dc[b] : [S];  dmemory[b] += w[b]^T dc[b]
    Tensor dw({B, S});
    ops::attention_context_backward(mem.data(), cache.weights.data(), dc.data(), B, S, Dv, dw.data(), dmem.data());
    if (dweights.defined() && !dweights.empty()) {
      check_tensor(dweights, {B, S}, "attention decoder backward: dweights [B, S]");
      add_into(dw.data(), dweights.data(), B * S);
    }
    // w = alpha g:  dalpha = dw g;  dp = sum_j dw_j alpha_j g_j (j - p) / sigma^2
    const float inv_s2 = 1.0f / (local_sigma(c.window) * local_sigma(c.window));
    Tensor dalpha({B, S}), da({B});
    const int32_t* len = memory.mask.key_lengths.defined() ? memory.mask.key_lengths.idata() : nullptr;
    for (int64_t b = 0; b < B; ++b) {
      double dp = 0.0;
      const float p = cache.pos.at(b);
      for (int64_t j = 0; j < S; ++j) {
        const int64_t i = b * S + j;
        dalpha.at(i) = dw.at(i) * cache.gauss.at(i);
        dp += static_cast<double>(dw.at(i)) * cache.weights.at(i) * (static_cast<float>(j) - p) * inv_s2;
      }
      const float s = cache.sig.at(b);   // p = S_b sigmoid(a)
      da.at(b) = static_cast<float>(dp) * static_cast<float>(len ? len[b] : S) * s * (1.0f - s);
    }
    dq = attention_->backward(Tensor({B, Dv}), cache.attn, memory, grad, dalpha);
    // a = v_p . zp:  dv_p += zp^T da;  dzp = da v_p;  zp = tanh(W_p q)
    blas::gemv(Trans::T, B, A, 1.0f, cache.zp.data(), A, da.data(), 1.0f, local_v_.grad.data());
    Tensor dpre({B, A});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < A; ++k) {
        const float z = cache.zp.at(b * A + k);
        dpre.at(b * A + k) = da.at(b) * local_v_.value.at(k) * (1.0f - z * z);
      }
    blas::gemm(Trans::T, Trans::N, A, Dq, B, 1.0f, dpre.data(), A, q.data(), Dq, 1.0f, local_W_.grad.data(), Dq);
    blas::gemm(Trans::N, Trans::N, B, Dq, A, 1.0f, dpre.data(), A, local_W_.value.data(), Dq, 1.0f, dq.data(), Dq);
  }
  if (c.gate)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < Dq; ++i) dq.at(b * Dq + i) += dz.at(b) * gate_.W.value.at(i);
  return dq;
}

void AttentionDecoder::step_backward(int64_t t, const float* dout, int64_t lddo, const float* o, int64_t ldo,
                                     const AttentionDecoderCache& cache, const AttentionMemory& memory,
                                     AttentionDecoderGrad& grad, const Tensor& dweights) {
  const AttentionDecoderConfig& c = config_;
  const int64_t B = grad.B, E = c.input_dim, Dd = c.hidden, Dv = c.context_dim();
  const int64_t G = rnn_.gates(), I = rnn_.input();
  if (t < 0 || t >= grad.T || t >= cache.T || cache.B != B)
    throw ShapeError("attention decoder backward: step " + std::to_string(t) + " is outside the " +
                     std::to_string(grad.T) + " steps of the gradients or the cache");
  const AttentionDecoderStepCache& sc = cache.steps[static_cast<size_t>(t)];
  const float* W_ih = rnn_.W_ih.value.data();
  Tensor dh({B, Dd});
  RnnState dprev;
  if (c.style == AttentionStyle::bahdanau) {
    copy_rows(dout, lddo, dh.data(), Dd, B, Dd);
    add_into(dh.data(), grad.dstate.h.data(), B * Dd);
    const Tensor dg = rnn_.step_backward({dh, grad.dstate.c}, sc.rnn, dprev);
    std::memcpy(grad.dgx.data() + t * B * G, dg.data(), static_cast<size_t>(B * G) * sizeof(float));
    if (attention_) {
      // dc_t = (o_t's c part) + dg W_ih[:, E:]
      Tensor dctx({B, Dv});
      copy_rows(dout + Dd, lddo, dctx.data(), Dv, B, Dv);
      blas::gemm(Trans::N, Trans::N, B, Dv, G, 1.0f, dg.data(), G, W_ih + E, I, 1.0f, dctx.data(), Dv);
      const Tensor dq = attend_backward(dctx, sc, memory, grad.memory, dweights);
      add_into(dprev.h.data(), dq.data(), B * Dd);
    }
  } else {
    // h~_t = tanh(W_c [c_t; s_t]) feeds o_t and the next step's input.
    float* dpre = grad.dpre.data() + t * B * Dd;
    const float* df = grad.dfeed.data();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < Dd; ++i) {
        const float ht = o[b * ldo + i];
        dpre[b * Dd + i] = (dout[b * lddo + i] + df[b * Dd + i]) * (1.0f - ht * ht);
      }
    Tensor dcs({B, Dv + Dd});
    blas::gemm(Trans::N, Trans::N, B, Dv + Dd, Dd, 1.0f, dpre, Dd, combine_.W.value.data(), Dv + Dd, 0.0f, dcs.data(),
               Dv + Dd);
    copy_rows(dcs.data() + Dv, Dv + Dd, dh.data(), Dd, B, Dd);
    add_into(dh.data(), grad.dstate.h.data(), B * Dd);
    if (attention_) {
      Tensor dctx({B, Dv});
      copy_rows(dcs.data(), Dv + Dd, dctx.data(), Dv, B, Dv);
      const Tensor dq = attend_backward(dctx, sc, memory, grad.memory, dweights);
      add_into(dh.data(), dq.data(), B * Dd);
    }
    const Tensor dg = rnn_.step_backward({dh, grad.dstate.c}, sc.rnn, dprev);
    std::memcpy(grad.dgx.data() + t * B * G, dg.data(), static_cast<size_t>(B * G) * sizeof(float));
    // dh~_{t-1} = dg W_ih[:, E:]
    if (t > 0)
      blas::gemm(Trans::N, Trans::N, B, Dd, G, 1.0f, dg.data(), G, W_ih + E, I, 0.0f, grad.dfeed.data(), Dd);
  }
  grad.dstate = dprev;
}

void AttentionDecoder::end_backward(const float* o, int64_t ldo, const AttentionDecoderCache& cache,
                                    const AttentionMemory& memory, AttentionDecoderGrad& grad) {
  const AttentionDecoderConfig& c = config_;
  const int64_t T = grad.T, B = grad.B, E = c.input_dim, Dd = c.hidden, Dv = c.context_dim(), G = rnn_.gates();
  if (c.style == AttentionStyle::bahdanau) {
    // step t's input columns E.. held c_t, which o_t holds after s_t
    if (attention_) rnn_.project_backward(grad.dgx.data(), T * B, o + Dd, ldo, /*col=*/E, Dv, false, nullptr, 0);
  } else {
    if (T > 1)   // step t's input columns E.. held h~_{t-1} = o_{t-1}
      rnn_.project_backward(grad.dgx.data() + B * G, (T - 1) * B, o, ldo, /*col=*/E, Dd, false, nullptr, 0);
    // dW_c += dpre^T [c; s]
    blas::gemm(Trans::T, Trans::N, Dd, Dv + Dd, T * B, 1.0f, grad.dpre.data(), Dd, cache.cs.data(), Dv + Dd, 1.0f,
               combine_.W.grad.data(), Dv + Dd);
  }
  if (attention_) attention_->backward_memory(memory, grad.memory);
}

void AttentionDecoder::input_backward(const AttentionDecoderGrad& grad, const float* x, int64_t ldx, float* dx,
                                      int64_t lddx) {
  rnn_.project_backward(grad.dgx.data(), grad.T * grad.B, x, ldx, /*col=*/0, config_.input_dim, /*with_bias=*/true,
                        dx, lddx);
}

// ---- beam search's gathers ---------------------------------------------------------------------

Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& index) {
  if (!x.defined() || x.empty()) return x;
  Shape shape = x.shape();
  const int64_t row = x.numel() / shape[0];
  shape[0] = static_cast<int64_t>(index.size());
  Tensor y = Tensor::uninitialized(shape, x.dtype());
  const size_t bytes = static_cast<size_t>(row) * 4;
  for (size_t i = 0; i < index.size(); ++i) {
    if (x.dtype() == DType::f32) std::memcpy(y.data() + i * row, x.data() + index[i] * row, bytes);
    else std::memcpy(y.idata() + i * row, x.idata() + index[i] * row, bytes);
  }
  return y;
}

AttentionMemory gather_rows(const AttentionMemory& a, const std::vector<int64_t>& index) {
  if (!a.keys.defined()) return {};
  AttentionMemory b;
  b.keys = gather_rows(a.keys, index);
  b.values = a.values_are_keys ? b.keys : gather_rows(a.values, index);
  b.values_are_keys = a.values_are_keys;
  b.projected_keys = gather_rows(a.projected_keys, index);
  b.mask = a.mask;
  b.mask.key_lengths = gather_rows(a.mask.key_lengths, index);
  if (a.mask.keep.defined() && a.mask.keep.dim(0) == a.keys.dim(0)) b.mask.keep = gather_rows(a.mask.keep, index);
  return b;
}

void AttentionDecoderState::select(const std::vector<int64_t>& keep) {
  const int64_t R = rows();
  for (int64_t r : keep)
    if (r < 0 || r >= R)
      throw ShapeError("attention decoder state: row " + std::to_string(r) + " out of range [0, " +
                       std::to_string(R) + ")");
  s.h = gather_rows(s.h, keep);
  s.c = gather_rows(s.c, keep);
  feed = gather_rows(feed, keep);
  const int64_t n = static_cast<int64_t>(keep.size());
  gx = Tensor({n, gx.dim(1)});   // scratch
  if (cs.defined()) cs = Tensor({n, cs.dim(1)});
}

}  // namespace attn::nn

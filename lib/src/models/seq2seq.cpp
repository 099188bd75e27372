// models::Seq2Seq: construction, the encoder, the decoder step, and the teacher-forced forward
// and backward of a training step. Searches are in seq2seq_search.cpp, the config in
// seq2seq_config.cpp.
#include "attn/models/seq2seq.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attn/blas/blas.hpp"
#include "attn/nn/init.hpp"
#include "attn/ops/activation.hpp"
#include "seq2seq_impl.hpp"

namespace attn::models {
namespace {

using blas::Trans;
using Impl = Seq2SeqImpl;

// y[t, b] = x[len_b - 1 - t, b] for t < len_b, x[t, b] otherwise: each sentence reversed within
// its length, the padding left in place. An involution, so it is its own backward.
// x: [S, B, F] -> [S, B, F] (new tensor).
Tensor reverse_within(const Tensor& x, const int32_t* len) {
  const int64_t S = x.dim(0), B = x.dim(1), F = x.dim(2);
  Tensor y(x.shape());
  const float* xp = x.data();
  float* yp = y.data();
  for (int64_t t = 0; t < S; ++t)
    for (int64_t b = 0; b < B; ++b) {
      const int64_t src_t = t < len[b] ? len[b] - 1 - t : t;
      std::memcpy(yp + (t * B + b) * F, xp + (src_t * B + b) * F, static_cast<size_t>(F) * sizeof(float));
    }
  return y;
}

void add_into(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

// Copies `rows` rows of `width` floats between strided buffers.
void copy_rows(const float* x, int64_t ldx, float* y, int64_t ldy, int64_t rows, int64_t width) {
  if (width == 0) return;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(y + r * ldy, x + r * ldx, static_cast<size_t>(width) * sizeof(float));
}

// One encoder direction over x: [S, B, I] in processing order -> y: [S, B, H].
// Without self-attention, the layer op (one input GEMM for all steps). With it, the simplified
// LSTMN of seq2seq.hpp: the input projection of x is still one GEMM; per step the attention over
// h_0..h_{t-1} with query h_{t-1} and the projection of its context h~_t.
Tensor run_direction(const nn::Rnn& rnn, const nn::Attention* self_attn, const Tensor& x, Impl::DirCache* dc) {
  if (self_attn == nullptr) return rnn.layer(x, dc ? &dc->layer : nullptr);
  const int64_t S = x.dim(0), B = x.dim(1), I = x.dim(2), H = rnn.hidden(), G = rnn.gates();
  Tensor gx({S * B, G});
  rnn.project(x.data(), I, S * B, /*col=*/0, I, /*with_bias=*/true, 0.0f, gx.data());
  Tensor keys({B, S, H}), ctx({S, B, H}), ys({S, B, H});
  nn::AttentionMemory memory = self_attn->prepare(keys, keys, ops::AttentionMask::causal_mask());
  if (dc != nullptr) {
    dc->x = x;
    dc->ctx = ctx;
    dc->keys = keys;
    dc->steps.assign(S, {});
    dc->attn.assign(S, {});
  }
  nn::RnnState st = rnn.zero_state(B);
  for (int64_t t = 0; t < S; ++t) {
    Tensor gxt = gx.rows(t * B, (t + 1) * B);
    if (t > 0) {   // h~_t = attention(h_{t-1}; h_0 .. h_{t-1}), causal at position t - 1
      const nn::AttentionStep a = self_attn->forward(st.h, memory, t - 1, dc ? &dc->attn[t] : nullptr);
      float* ct = ctx.data() + t * B * H;
      std::memcpy(ct, a.context.data(), static_cast<size_t>(B * H) * sizeof(float));
      rnn.project(ct, H, B, /*col=*/I, H, /*with_bias=*/false, 1.0f, gxt.data());
    }
    st = rnn.step(gxt, st, dc ? &dc->steps[t] : nullptr);
    std::memcpy(ys.data() + t * B * H, st.h.data(), static_cast<size_t>(B * H) * sizeof(float));
    copy_rows(st.h.data(), H, keys.data() + t * H, S * H, B, H);
  }
  if (dc != nullptr) dc->memory = memory;
  return ys;
}

// dy: [S, B, H] -> dx: [S, B, I]; adds into the direction's params.
Tensor backward_direction(nn::Rnn& rnn, nn::Attention* self_attn, const Tensor& dy, Impl::DirCache& dc) {
  if (self_attn == nullptr) return rnn.layer_backward(dy, dc.layer);
  const int64_t S = dy.dim(0), B = dy.dim(1), H = dy.dim(2), I = dc.x.dim(2), G = rnn.gates();
  nn::AttentionMemoryGrad grad = self_attn->begin_backward(dc.memory);
  Tensor dgx({S * B, G});
  nn::RnnState dnext = rnn.zero_state(B);
  for (int64_t t = S - 1; t >= 0; --t) {
    // dh_t = dy_t + (from step t+1: cell and attention query) + (as a key of steps > t)
    Tensor dh({B, H});
    float* dhp = dh.data();
    const float* dyp = dy.data() + t * B * H;
    const float* dn = dnext.h.data();
    const float* dk = grad.dkeys.data();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < H; ++i)
        dhp[b * H + i] = dyp[b * H + i] + dn[b * H + i] + dk[(b * S + t) * H + i];
    nn::RnnState dprev;
    const Tensor dg = rnn.step_backward({dh, dnext.c}, dc.steps[t], dprev);
    std::memcpy(dgx.data() + t * B * G, dg.data(), static_cast<size_t>(B * G) * sizeof(float));
    if (t > 0) {
      Tensor dctx({B, H});   // dW_ih[:, I:] += dg^T h~_t;  dh~_t = dg W_ih[:, I:]
      rnn.project_backward(dg.data(), B, dc.ctx.data() + t * B * H, H, /*col=*/I, H, /*with_bias=*/false,
                           dctx.data(), H);
      const Tensor dq = self_attn->backward(dctx, dc.attn[t], dc.memory, grad);
      add_into(dprev.h.data(), dq.data(), B * H);
    }
    dnext = dprev;
  }
  self_attn->backward_memory(dc.memory, grad);
  Tensor dx({S, B, I});
  rnn.project_backward(dgx.data(), S * B, dc.x.data(), I, /*col=*/0, I, /*with_bias=*/true, dx.data(), I);
  return dx;
}

nn::ScoreKind score_kind(nn::ScoreKind s) {
  switch (s) {
    case nn::ScoreKind::dot: return nn::ScoreKind::dot;
    case nn::ScoreKind::scaled_dot: return nn::ScoreKind::scaled_dot;
    case nn::ScoreKind::general: return nn::ScoreKind::general;
    case nn::ScoreKind::concat: return nn::ScoreKind::concat;
    case nn::ScoreKind::location: return nn::ScoreKind::location;
    case nn::ScoreKind::none: break;
  }
  throw ConfigError("seq2seq: attention 'none' has no score function");
}

// Local-p's Gaussian width sigma = D / 2 (Luong et al. 2015, eq. 10).
float local_sigma(int64_t window) { return static_cast<float>(window) / 2.0f; }

// c_t, a_t = attend(q) at target step t (see seq2seq.hpp), with local_p's predicted position.
void attend(const Seq2SeqConfig& c, const nn::Attention& attention, const Param& W_p,
            const Param& v_p, int64_t t, const Tensor& q, Impl::Encoded& enc, Impl::StepCache* cache, Tensor& ctx,
            Tensor& weights) {
  if (c.local != LocalAttention::local_p) {
    const nn::AttentionStep a = attention.forward(q, enc.attn, t, cache ? &cache->attn : nullptr);
    ctx = a.context;
    weights = a.weights;
    if (cache != nullptr) cache->weights = weights;
    return;
  }
  const int64_t B = q.dim(0), Dq = q.dim(1), A = c.attention_dim, S = enc.memory.dim(1), Dv = enc.memory.dim(2);
  // zp = tanh(W_p q) [B, A];  p_t = S_b sigmoid(v_p . zp)
  Tensor zp({B, A});
  blas::gemm(Trans::N, Trans::T, B, A, Dq, 1.0f, q.data(), Dq, W_p.value.data(), Dq, 0.0f, zp.data(), A);
  for (float& z : zp.values()) z = std::tanh(z);
  Tensor sig({B}), pos({B});
  blas::gemv(Trans::N, B, A, 1.0f, zp.data(), A, v_p.value.data(), 0.0f, sig.data());
  const int32_t* len = enc.src_len.idata();
  const float D = static_cast<float>(c.attention_window);
  int32_t* keep = enc.attn.mask.keep.idata();
  for (int64_t b = 0; b < B; ++b) {
    const float s = 1.0f / (1.0f + std::exp(-sig.at(b)));
    sig.at(b) = s;
    pos.at(b) = static_cast<float>(len[b]) * s;
    for (int64_t j = 0; j < S; ++j) keep[b * S + j] = std::fabs(static_cast<float>(j) - pos.at(b)) <= D ? 1 : 0;
  }
  const nn::AttentionStep a = attention.forward(q, enc.attn, t, cache ? &cache->attn : nullptr);
  Tensor gauss({B, S});
  weights = Tensor({B, S});
  const float inv2s2 = 1.0f / (2.0f * local_sigma(c.attention_window) * local_sigma(c.attention_window));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < S; ++j) {
      const float d = static_cast<float>(j) - pos.at(b);
      gauss.at(b * S + j) = std::exp(-d * d * inv2s2);
      weights.at(b * S + j) = a.weights.at(b * S + j) * gauss.at(b * S + j);
    }
  // c[b] = w[b] memory[b] : [Dv]
  ctx = Tensor({B, Dv});
  blas::gemm_strided_batched(Trans::N, Trans::N, 1, Dv, S, 1.0f, weights.data(), S, S, enc.memory.data(), Dv,
                             S * Dv, 0.0f, ctx.data(), Dv, Dv, B);
  if (cache != nullptr) {
    cache->zp = zp;
    cache->sig = sig;
    cache->pos = pos;
    cache->gauss = gauss;
    cache->weights = weights;
  }
}

// dctx: [B, Dv] -> dq [B, Dq]; adds into the attention's (and local_p's) grads and `grad`.
Tensor attend_backward(const Seq2SeqConfig& c, nn::Attention& attention, Param& W_p, Param& v_p,
                       const Tensor& dctx, const Impl::StepCache& cache, const Impl::Encoded& enc,
                       nn::AttentionMemoryGrad& grad) {
  if (c.local != LocalAttention::local_p) return attention.backward(dctx, cache.attn, enc.attn, grad);
  const Tensor& mem = enc.memory;
  const int64_t B = dctx.dim(0), S = mem.dim(1), Dv = mem.dim(2), A = c.attention_dim;
  const Tensor& q = cache.attn.query;
  const int64_t Dq = q.dim(1);
  // c = w memory:  dw[b] = memory[b] dc[b] : [S];  dmemory[b] += w[b]^T dc[b]
  Tensor dw({B, S});
  blas::gemm_strided_batched(Trans::N, Trans::N, S, 1, Dv, 1.0f, mem.data(), Dv, S * Dv, dctx.data(), 1, Dv, 0.0f,
                             dw.data(), 1, S, B);
  blas::gemm_strided_batched(Trans::T, Trans::N, S, Dv, 1, 1.0f, cache.weights.data(), S, S, dctx.data(), Dv, Dv,
                             1.0f, grad.dkeys.data(), Dv, S * Dv, B);
  // w = alpha g:  dalpha = dw g;  dp = sum_j dw_j alpha_j g_j (j - p) / sigma^2
  const float inv_s2 = 1.0f / (local_sigma(c.attention_window) * local_sigma(c.attention_window));
  Tensor dalpha({B, S}), da({B});
  const int32_t* len = enc.src_len.idata();
  for (int64_t b = 0; b < B; ++b) {
    double dp = 0.0;
    const float p = cache.pos.at(b);
    for (int64_t j = 0; j < S; ++j) {
      const int64_t i = b * S + j;
      dalpha.at(i) = dw.at(i) * cache.gauss.at(i);
      dp += static_cast<double>(dw.at(i)) * cache.weights.at(i) * (static_cast<float>(j) - p) * inv_s2;
    }
    const float s = cache.sig.at(b);   // p = S_b sigmoid(a)
    da.at(b) = static_cast<float>(dp) * static_cast<float>(len[b]) * s * (1.0f - s);
  }
  Tensor dq = attention.backward(Tensor({B, Dv}), cache.attn, enc.attn, grad, dalpha);
  // a = v_p . zp:  dv_p += zp^T da;  dzp = da v_p;  zp = tanh(W_p q)
  blas::gemv(Trans::T, B, A, 1.0f, cache.zp.data(), A, da.data(), 1.0f, v_p.grad.data());
  Tensor dpre({B, A});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < A; ++k) {
      const float z = cache.zp.at(b * A + k);
      dpre.at(b * A + k) = da.at(b) * v_p.value.at(k) * (1.0f - z * z);
    }
  blas::gemm(Trans::T, Trans::N, A, Dq, B, 1.0f, dpre.data(), A, q.data(), Dq, 1.0f, W_p.grad.data(), Dq);
  blas::gemm(Trans::N, Trans::N, B, Dq, A, 1.0f, dpre.data(), A, W_p.value.data(), Dq, 1.0f, dq.data(), Dq);
  return dq;
}

// The decoder attention's memory: padding mask, window for local_m, a per-step keep mask for local_p.
}  // namespace

void Seq2SeqImpl::prepare_attention(const Seq2SeqConfig& c, const nn::Attention* attention, Encoded& enc) {
  if (attention == nullptr) return;
  ops::AttentionMask mask = ops::AttentionMask::padding(enc.src_len);
  if (c.local == LocalAttention::local_m) mask.window = c.attention_window;
  enc.attn = attention->prepare(enc.memory, enc.memory, mask);
  if (c.local == LocalAttention::local_p)
    enc.attn.mask.keep = Tensor({enc.memory.dim(0), 1, enc.memory.dim(1)}, DType::i32);
}

// ---- construction ----------------------------------------------------------------------------

Seq2Seq::Seq2Seq(const Seq2SeqConfig& config, Rng& rng) : config_(config) {
  config.validate();
  const Seq2SeqConfig& c = config_;
  const int64_t E = c.embed_dim, H = c.hidden, dirs = c.bidirectional ? 2 : 1, Dv = c.memory_dim();
  const int64_t Dd = c.dec_hidden, Dc = c.context_dim();
  src_embed_ = nn::Embedding(c.src_vocab, E, "encoder/embedding", rng, 1.0f, kPad);
  for (int64_t l = 0; l < c.layers; ++l)
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string name = "encoder/layer" + std::to_string(l) + (d == 0 ? "/fwd" : "/bwd");
      const int64_t I = (l == 0 ? E : Dv) + (c.encoder_self_attention ? H : 0);
      EncoderRnn er{nn::Rnn(c.cell, I, H, name, rng), nullptr};
      if (c.encoder_self_attention)
        er.self_attn = std::make_unique<nn::Attention>(nn::AttentionConfig{nn::ScoreKind::general, H, H, 0, 0},
                                                       name + "/self_attn", rng);
      encoder_.push_back(std::move(er));
    }
  bridge_ = nn::Linear(Dv, Dd, "bridge", rng);
  tgt_embed_ = nn::Embedding(c.tgt_vocab, E, "decoder/embedding", rng, 1.0f, kPad);
  const int64_t extra = c.attention_style == AttentionStyle::bahdanau ? Dc : Dd;   // [e; c] or [e; h~]
  decoder_ = nn::Rnn(c.cell, E + extra, Dd, "decoder/rnn", rng);
  if (c.attention != nn::ScoreKind::none)
    attention_ = std::make_unique<nn::Attention>(
        nn::AttentionConfig{score_kind(c.attention), Dd, Dv, c.attention_dim, c.max_src_len}, "decoder/attention",
        rng);
  if (c.local == LocalAttention::local_p) {
    const int64_t A = c.attention_dim;
    local_W_ = Param("decoder/local_p/W", nn::glorot_uniform({A, Dd}, rng));
    const float bound = 1.0f / std::sqrt(static_cast<float>(A));
    local_v_ = Param("decoder/local_p/v", rand_uniform({A}, rng, -bound, bound));
  }
  if (c.attention_style == AttentionStyle::luong) combine_ = nn::Linear(Dc + Dd, Dd, "decoder/combine", rng, /*bias=*/false);
  output_ = nn::Linear(c.output_input_dim(), c.tgt_vocab, "output", rng);
}

Seq2Seq::~Seq2Seq() = default;
Seq2Seq::Seq2Seq(Seq2Seq&&) noexcept = default;
Seq2Seq& Seq2Seq::operator=(Seq2Seq&&) noexcept = default;

ParamList Seq2Seq::params() {
  ParamList list = src_embed_.params();
  for (EncoderRnn& er : encoder_) {
    nn::append(list, er.rnn.params());
    if (er.self_attn) nn::append(list, er.self_attn->params());
  }
  nn::append(list, bridge_.params());
  nn::append(list, tgt_embed_.params());
  nn::append(list, decoder_.params());
  if (attention_) nn::append(list, attention_->params());
  if (local_W_.value.defined()) nn::append(list, {&local_W_, &local_v_});
  if (combine_.W.value.defined()) nn::append(list, combine_.params());
  nn::append(list, output_.params());
  return list;
}

// ---- encoder ---------------------------------------------------------------------------------

void Seq2SeqImpl::check_source(const Seq2Seq& m, const Tensor& src, const Tensor& src_len, const std::string& label) {
  check_tensor(src, {kAny, kAny}, label + ": src [B, S]", DType::i32);
  const int64_t B = src.dim(0), S = src.dim(1);
  check_tensor(src_len, {B}, label + ": src_len [B]", DType::i32);
  if (S < 1) throw ShapeError(label + ": src [B, S] has S = 0");
  for (int64_t b = 0; b < B; ++b) {
    const int32_t l = src_len.idata()[b];
    if (l < 1 || l > S)
      throw DataError(label + ": src_len[" + std::to_string(b) + "] = " + std::to_string(l) + " is outside [1, S = " +
                      std::to_string(S) + "]");
  }
  if (m.config_.attention == nn::ScoreKind::location && S > m.config_.max_src_len)
    throw ShapeError(label + ": source length S = " + std::to_string(S) + " exceeds max_src_len = " +
                     std::to_string(m.config_.max_src_len) + " of the location attention");
}

Impl::Encoded Seq2SeqImpl::encode(const Seq2Seq& m, const Tensor& src, const Tensor& src_len, bool training,
                                  Rng& rng, EncoderCache* cache) {
  const Seq2SeqConfig& c = m.config_;
  const int64_t B = src.dim(0), S = src.dim(1), H = c.hidden, dirs = c.bidirectional ? 2 : 1;
  const int32_t* len = src_len.idata();
  const Tensor ids = ops::transpose_forward(src, 0, 1, nullptr);   // [S, B]
  Tensor x = m.src_embed_.forward(ids, cache ? &cache->embed : nullptr);   // [S, B, E]
  if (cache != nullptr) cache->layers.assign(c.layers, {});
  for (int64_t l = 0; l < c.layers; ++l) {
    LayerCache* lc = cache ? &cache->layers[l] : nullptr;
    if (l > 0) x = ops::dropout_forward(x, c.dropout, training, rng, lc ? &lc->drop : nullptr);
    std::vector<Tensor> ys;
    for (int64_t d = 0; d < dirs; ++d) {
      const auto& er = m.encoder_[l * dirs + d];
      const Tensor xin = d == 0 ? x : reverse_within(x, len);
      const Tensor y = run_direction(er.rnn, er.self_attn.get(), xin, lc ? &lc->dir[d] : nullptr);
      ys.push_back(d == 0 ? y : reverse_within(y, len));
    }
    x = dirs == 2 ? ops::concat_forward(ys, 2, lc ? &lc->concat : nullptr) : ys[0];
  }
  Encoded enc;
  enc.memory = ops::transpose_forward(x, 0, 1, cache ? &cache->to_batch : nullptr);   // [B, S, Dv]
  enc.src_len = src_len;
  // The final states: forward at len - 1, backward at 0 (the last it read).
  const int64_t Dv = enc.memory.dim(2);
  Tensor final_states({B, Dv});
  for (int64_t b = 0; b < B; ++b) {
    const float* mb = enc.memory.data() + b * S * Dv;
    std::memcpy(final_states.data() + b * Dv, mb + (len[b] - 1) * Dv, static_cast<size_t>(H) * sizeof(float));
    if (dirs == 2) std::memcpy(final_states.data() + b * Dv + H, mb + H, static_cast<size_t>(H) * sizeof(float));
  }
  enc.s0 = ops::tanh_forward(m.bridge_.forward(final_states, cache ? &cache->bridge : nullptr),
                             cache ? &cache->bridge_tanh : nullptr);
  prepare_attention(c, m.attention_.get(), enc);
  return enc;
}

void Seq2SeqImpl::encode_backward(Seq2Seq& m, const Encoded& enc, Tensor dmemory, const Tensor& ds0,
                                  EncoderCache& cache) {
  const Seq2SeqConfig& c = m.config_;
  const int64_t B = dmemory.dim(0), S = dmemory.dim(1), Dv = dmemory.dim(2), H = c.hidden;
  const int64_t dirs = c.bidirectional ? 2 : 1;
  const int32_t* len = enc.src_len.idata();
  const Tensor dfinal = m.bridge_.backward(ops::tanh_backward(ds0, cache.bridge_tanh), cache.bridge);
  for (int64_t b = 0; b < B; ++b) {
    float* db = dmemory.data() + b * S * Dv;
    add_into(db + (len[b] - 1) * Dv, dfinal.data() + b * Dv, H);
    if (dirs == 2) add_into(db + H, dfinal.data() + b * Dv + H, H);
  }
  Tensor dx = ops::permute_backward(dmemory, cache.to_batch);   // [S, B, Dv]
  for (int64_t l = c.layers - 1; l >= 0; --l) {
    LayerCache& lc = cache.layers[l];
    const std::vector<Tensor> dys = dirs == 2 ? ops::concat_backward(dx, lc.concat) : std::vector<Tensor>{dx};
    Tensor dxl;
    for (int64_t d = 0; d < dirs; ++d) {
      auto& er = m.encoder_[l * dirs + d];
      const Tensor dy = d == 0 ? dys[0] : reverse_within(dys[1], len);
      Tensor dxin = backward_direction(er.rnn, er.self_attn.get(), dy, lc.dir[d]);
      if (d == 0) dxl = dxin;
      else add_into(dxl.data(), reverse_within(dxin, len).data(), dxl.numel());
    }
    dx = l > 0 ? ops::dropout_backward(dxl, lc.drop) : dxl;
  }
  m.src_embed_.backward(dx, cache.embed);
}

// ---- decoder ---------------------------------------------------------------------------------

Impl::DecoderState Seq2SeqImpl::initial_state(const Seq2Seq& m, const Encoded& enc) {
  const Seq2SeqConfig& c = m.config_;
  const int64_t B = enc.s0.dim(0);
  DecoderState st;
  st.s = m.decoder_.zero_state(B);
  st.s.h = enc.s0;
  st.gx = Tensor({B, m.decoder_.gates()});
  if (c.attention_style == AttentionStyle::luong) {
    st.feed = Tensor({B, c.dec_hidden});
    st.cs = Tensor({B, c.context_dim() + c.dec_hidden});
  }
  return st;
}

Tensor Seq2SeqImpl::decoder_step(const Seq2Seq& m, int64_t t, const float* gx_e, const float* e, DecoderState& st,
                                 Encoded& enc, float* o, float* cs, StepCache* cache) {
  const Seq2SeqConfig& c = m.config_;
  const int64_t B = st.s.h.dim(0), E = c.embed_dim, Dd = c.dec_hidden, Dv = c.context_dim();
  const int64_t Do = c.output_input_dim(), G = m.decoder_.gates();
  std::memcpy(st.gx.data(), gx_e, static_cast<size_t>(B * G) * sizeof(float));
  nn::RnnStepCache* rc = cache ? &cache->rnn : nullptr;
  Tensor ctx, weights;
  auto attend_with = [&](const Tensor& q) {
    attend(c, *m.attention_, m.local_W_, m.local_v_, t, q, enc, cache, ctx, weights);
  };
  if (c.attention_style == AttentionStyle::bahdanau) {
    // c_t from s_{t-1};  s_t = RNN([e_t; c_t], s_{t-1});  o_t = [s_t; c_t; e_t]
    if (m.attention_) {
      attend_with(st.s.h);
      m.decoder_.project(ctx.data(), Dv, B, /*col=*/E, Dv, /*with_bias=*/false, 1.0f, st.gx.data());
    }
    st.s = m.decoder_.step(st.gx, st.s, rc);
    copy_rows(st.s.h.data(), Dd, o, Do, B, Dd);
    if (m.attention_) copy_rows(ctx.data(), Dv, o + Dd, Do, B, Dv);
    copy_rows(e, E, o + Dd + Dv, Do, B, E);
  } else {
    // s_t = RNN([e_t; h~_{t-1}], s_{t-1});  c_t from s_t;  o_t = h~_t = tanh(W_c [c_t; s_t])
    m.decoder_.project(st.feed.data(), Dd, B, /*col=*/E, Dd, /*with_bias=*/false, 1.0f, st.gx.data());
    st.s = m.decoder_.step(st.gx, st.s, rc);
    if (m.attention_) {
      attend_with(st.s.h);
      copy_rows(ctx.data(), Dv, cs, Dv + Dd, B, Dv);
    }
    copy_rows(st.s.h.data(), Dd, cs + Dv, Dv + Dd, B, Dd);
    blas::gemm(Trans::N, Trans::T, B, Dd, Dv + Dd, 1.0f, cs, Dv + Dd, m.combine_.W.value.data(), Dv + Dd, 0.0f, o,
               Dd);
    for (int64_t i = 0; i < B * Dd; ++i) o[i] = std::tanh(o[i]);
    std::memcpy(st.feed.data(), o, static_cast<size_t>(B * Dd) * sizeof(float));
  }
  return weights;
}

namespace {

// The teacher-forced forward (scheduled sampling when training with teacher_forcing < 1):
// fills run.enc, run.O and run.logits; with caches, everything backward needs.
void run_forward(const Seq2Seq& m, const Seq2SeqConfig& c, const nn::Embedding& tgt_embed, const nn::Rnn& decoder,
                 const nn::Linear& output, const TokenBatch& batch, bool training, bool keep_caches, Rng& rng,
                 Impl::Run& run, float* alignment) {
  Impl::check_source(m, batch.src, batch.src_len, "seq2seq");
  const int64_t B = batch.src.dim(0), S = batch.src.dim(1);
  check_tensor(batch.tgt, {B, kAny}, "seq2seq: tgt [B, T]", DType::i32);
  check_tensor(batch.tgt_len, {B}, "seq2seq: tgt_len [B]", DType::i32);
  const int64_t T = batch.tgt.dim(1), E = c.embed_dim, Dd = c.dec_hidden, Dv = c.context_dim();
  const int64_t Do = c.output_input_dim(), G = decoder.gates(), V = c.tgt_vocab;
  if (T < 1) throw ShapeError("seq2seq: tgt [B, T] has T = 0");
  run.B = B;
  run.S = S;
  run.T = T;
  run.enc = Impl::encode(m, batch.src, batch.src_len, training, rng, keep_caches ? &run.encoder : nullptr);

  // Decoder inputs [BOS, y_0, ..., y_{T-2}] and targets y_t (t < tgt_len), time-major.
  run.ids_in = Tensor({T, B}, DType::i32);
  run.targets = Tensor({T * B}, DType::i32);
  const int32_t* tgt = batch.tgt.idata();
  const int32_t* tlen = batch.tgt_len.idata();
  int32_t* in = run.ids_in.idata();
  int32_t* tg = run.targets.idata();
  for (int64_t b = 0; b < B; ++b) {
    if (tlen[b] < 0 || tlen[b] > T)
      throw DataError("seq2seq: tgt_len[" + std::to_string(b) + "] = " + std::to_string(tlen[b]) +
                      " is outside [0, T = " + std::to_string(T) + "]");
    for (int64_t t = 0; t < T; ++t) {
      in[t * B + b] = t == 0 ? kBos : tgt[b * T + t - 1];
      tg[t * B + b] = t < tlen[b] ? tgt[b * T + t] : -1;
    }
  }
  run.emb = tgt_embed.forward(run.ids_in, keep_caches ? &run.tgt_embed : nullptr).reshape({T * B, E});
  run.gx = Tensor({T * B, G});
  decoder.project(run.emb.data(), E, T * B, /*col=*/0, E, /*with_bias=*/true, 0.0f, run.gx.data());
  run.O = Tensor({T * B, Do});
  if (c.attention_style == AttentionStyle::luong) run.CS = Tensor({T * B, Dv + Dd});
  if (keep_caches) run.steps.assign(T, {});

  Impl::DecoderState st = Impl::initial_state(m, run.enc);
  const bool sampling = training && c.teacher_forcing < 1.0f;
  Tensor pred = sampling ? Tensor({B, V}) : Tensor();
  for (int64_t t = 0; t < T; ++t) {
    if (sampling && t > 0) {
      // Feed the greedy prediction from o_{t-1} (without dropout) with probability 1 - ratio.
      blas::gemm(Trans::N, Trans::T, B, V, Do, 1.0f, run.O.data() + (t - 1) * B * Do, Do, output.W.value.data(), Do,
                 0.0f, pred.data(), V);
      for (int64_t b = 0; b < B; ++b) {
        if (rng.uniform() < c.teacher_forcing) continue;
        const float* row = pred.data() + b * V;   // logits_v = row_v + b_v
        const float* bias = output.b.value.data();
        int64_t best = 0;
        for (int64_t v = 1; v < V; ++v)
          if (row[v] + bias[v] > row[best] + bias[best]) best = v;
        in[t * B + b] = static_cast<int32_t>(best);
      }
      const Tensor e_t = tgt_embed.forward(run.ids_in[t], nullptr);
      std::memcpy(run.emb.data() + t * B * E, e_t.data(), static_cast<size_t>(B * E) * sizeof(float));
      decoder.project(e_t.data(), E, B, 0, E, true, 0.0f, run.gx.data() + t * B * G);
    }
    const Tensor w = Impl::decoder_step(m, t, run.gx.data() + t * B * G, run.emb.data() + t * B * E, st, run.enc,
                                        run.O.data() + t * B * Do,
                                        c.attention_style == AttentionStyle::luong ? run.CS.data() + t * B * (Dv + Dd) : nullptr,
                                        keep_caches ? &run.steps[t] : nullptr);
    if (alignment != nullptr && w.defined())
      for (int64_t b = 0; b < B; ++b)
        std::memcpy(alignment + (b * T + t) * S, w.data() + b * S, static_cast<size_t>(S) * sizeof(float));
  }
  const Tensor o = ops::dropout_forward(run.O, c.dropout, training, rng, keep_caches ? &run.out_drop : nullptr);
  run.logits = output.forward(o, keep_caches ? &run.out : nullptr);
}


}  // namespace

LossStats Seq2Seq::train_step(const TokenBatch& batch, Rng& dropout_rng) {
  const Seq2SeqConfig& c = config_;
  Impl::Run run;
  run_forward(*this, c, tgt_embed_, decoder_, output_, batch, /*training=*/true, /*keep_caches=*/true, dropout_rng,
              run, nullptr);
  // The loss and its gradient in one op; the gradient overwrites the logits.
  const LossStats stats = loss_stats(
      ops::cross_entropy_forward_backward_inplace(run.logits, run.targets, {/*ignore_index=*/-1, c.label_smoothing}, 1.0f));
  if (stats.tokens == 0) return stats;

  const int64_t B = run.B, S = run.S, T = run.T, E = c.embed_dim, Dd = c.dec_hidden, Dv = c.context_dim();
  const int64_t Do = c.output_input_dim(), G = decoder_.gates(), I = decoder_.input();
  // logits = dropout(O) W_o^T + b_o, one GEMM each way for all T*B rows.
  const Tensor dO = ops::dropout_backward(output_.backward(run.logits, run.out), run.out_drop);
  run.logits = Tensor();

  nn::AttentionMemoryGrad grad;
  if (attention_) grad = attention_->begin_backward(run.enc.attn);
  Tensor dGX({T * B, G}), dEmb({T * B, E}), dPRE;
  const bool luong = c.attention_style == AttentionStyle::luong;
  if (!luong) copy_rows(dO.data() + Dd + Dv, Do, dEmb.data(), E, T * B, E);   // o_t's e_t part
  else dPRE = Tensor({T * B, Dd});
  nn::RnnState dstate = decoder_.zero_state(B);   // dL/ds_t from the steps after t
  Tensor dfeed = luong ? Tensor({B, Dd}) : Tensor();
  const float* W_ih = decoder_.W_ih.value.data();
  for (int64_t t = T - 1; t >= 0; --t) {
    Impl::StepCache& sc = run.steps[t];
    const float* do_t = dO.data() + t * B * Do;
    Tensor dh({B, Dd});
    nn::RnnState dprev;
    if (!luong) {
      copy_rows(do_t, Do, dh.data(), Dd, B, Dd);
      add_into(dh.data(), dstate.h.data(), B * Dd);
      const Tensor dg = decoder_.step_backward({dh, dstate.c}, sc.rnn, dprev);
      std::memcpy(dGX.data() + t * B * G, dg.data(), static_cast<size_t>(B * G) * sizeof(float));
      if (attention_) {
        // dc_t = (o_t's c part) + dg W_ih[:, E:]
        Tensor dctx({B, Dv});
        copy_rows(do_t + Dd, Do, dctx.data(), Dv, B, Dv);
        blas::gemm(Trans::N, Trans::N, B, Dv, G, 1.0f, dg.data(), G, W_ih + E, I, 1.0f, dctx.data(), Dv);
        const Tensor dq = attend_backward(c, *attention_, local_W_, local_v_, dctx, sc, run.enc, grad);
        add_into(dprev.h.data(), dq.data(), B * Dd);
      }
    } else {
      // h~_t = tanh(W_c [c_t; s_t]) feeds o_t and the next step's input.
      float* dpre = dPRE.data() + t * B * Dd;
      const float* ht = run.O.data() + t * B * Dd;
      for (int64_t i = 0; i < B * Dd; ++i) dpre[i] = (do_t[i] + dfeed.at(i)) * (1.0f - ht[i] * ht[i]);
      Tensor dcs({B, Dv + Dd});
      blas::gemm(Trans::N, Trans::N, B, Dv + Dd, Dd, 1.0f, dpre, Dd, combine_.W.value.data(), Dv + Dd, 0.0f,
                 dcs.data(), Dv + Dd);
      copy_rows(dcs.data() + Dv, Dv + Dd, dh.data(), Dd, B, Dd);
      add_into(dh.data(), dstate.h.data(), B * Dd);
      if (attention_) {
        Tensor dctx({B, Dv});
        copy_rows(dcs.data(), Dv + Dd, dctx.data(), Dv, B, Dv);
        const Tensor dq = attend_backward(c, *attention_, local_W_, local_v_, dctx, sc, run.enc, grad);
        add_into(dh.data(), dq.data(), B * Dd);
      }
      const Tensor dg = decoder_.step_backward({dh, dstate.c}, sc.rnn, dprev);
      std::memcpy(dGX.data() + t * B * G, dg.data(), static_cast<size_t>(B * G) * sizeof(float));
      // dh~_{t-1} = dg W_ih[:, E:]
      if (t > 0)
        blas::gemm(Trans::N, Trans::N, B, Dd, G, 1.0f, dg.data(), G, W_ih + E, I, 0.0f, dfeed.data(), Dd);
    }
    dstate = dprev;
  }
  // The input projection's weights, one GEMM per column block over all T*B rows.
  decoder_.project_backward(dGX.data(), T * B, run.emb.data(), E, /*col=*/0, E, /*with_bias=*/true, dEmb.data(), E);
  if (!luong && attention_)
    decoder_.project_backward(dGX.data(), T * B, run.O.data() + Dd, Do, /*col=*/E, Dv, false, nullptr, 0);
  if (luong) {
    if (T > 1)   // step t's feed is h~_{t-1}
      decoder_.project_backward(dGX.data() + B * G, (T - 1) * B, run.O.data(), Dd, /*col=*/E, Dd, false, nullptr, 0);
    // dW_c += dpre^T [c; s]
    blas::gemm(Trans::T, Trans::N, Dd, Dv + Dd, T * B, 1.0f, dPRE.data(), Dd, run.CS.data(), Dv + Dd, 1.0f,
               combine_.W.grad.data(), Dv + Dd);
  }
  tgt_embed_.backward(dEmb.reshape({T, B, E}), run.tgt_embed);

  Tensor dmemory;
  if (attention_) {
    attention_->backward_memory(run.enc.attn, grad);
    dmemory = grad.dkeys;
  } else {
    dmemory = Tensor({B, S, c.memory_dim()});
  }
  Impl::encode_backward(*this, run.enc, dmemory, dstate.h, run.encoder);
  return stats;
}

LossStats Seq2Seq::evaluate(const TokenBatch& batch) const {
  Impl::Run run;
  Rng unused(0);
  run_forward(*this, config_, tgt_embed_, decoder_, output_, batch, /*training=*/false, /*keep_caches=*/false,
              unused, run, nullptr);
  return loss_stats(ops::cross_entropy_forward(run.logits, run.targets, {/*ignore_index=*/-1, config_.label_smoothing}, nullptr));
}

Tensor Seq2Seq::logits(const TokenBatch& batch, Tensor* alignment) const {
  Impl::Run run;
  Rng unused(0);
  Tensor align;
  if (alignment != nullptr) {
    check_tensor(batch.src, {kAny, kAny}, "seq2seq: src [B, S]", DType::i32);
    check_tensor(batch.tgt, {batch.src.dim(0), kAny}, "seq2seq: tgt [B, T]", DType::i32);
    align = Tensor({batch.src.dim(0), batch.tgt.dim(1), batch.src.dim(1)});
  }
  run_forward(*this, config_, tgt_embed_, decoder_, output_, batch, /*training=*/false, /*keep_caches=*/false, unused,
              run, alignment ? align.data() : nullptr);
  if (alignment != nullptr) *alignment = align;
  // [T*B, V] time-major -> [B, T, V]
  return ops::transpose_forward(run.logits.reshape({run.T, run.B, config_.tgt_vocab}), 0, 1, nullptr);
}

}  // namespace attn::models

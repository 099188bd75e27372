// seq2seq::Seq2Seq: construction, the encoder, and the teacher-forced forward and backward of a
// training step around the decoder's steps (nn::AttentionDecoder). Step-by-step decoding is in
// seq2seq_step.cpp, the config in seq2seq_config.cpp.
#include "attn/families/seq2seq/model.hpp"

#include <cstring>

#include "attn/blas/blas.hpp"
#include "attn/nn/grad_ready.hpp"
#include "attn/ops/activation.hpp"
#include "attn/ops/rows.hpp"
#include "model_impl.hpp"

namespace attn::seq2seq {
namespace {

using blas::Trans;
using Impl = Seq2SeqImpl;

// y[t, b] = x[len_b - 1 - t, b] for t < len_b, x[t, b] otherwise: each sentence reversed within
// its length, the padding left in place. An involution, so it is its own backward.
// x: [S, B, D] -> [S, B, D] (new tensor).
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

using ops::add_into;
using ops::copy_rows;

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

// The decoder's configuration: the decoder step of seq2seq.hpp, without the context gate.
nn::AttentionDecoderConfig decoder_config(const Seq2SeqConfig& c) {
  return {.cell = c.cell,
          .input_dim = c.embed_dim,
          .hidden = c.dec_hidden,
          .score = c.attention,
          .memory_dim = c.memory_dim(),
          .attention_dim = c.attention_dim,
          .max_len = c.max_src_len,
          .style = c.attention_style,
          .local = c.local,
          .window = c.attention_window,
          .gate = false};
}

}  // namespace

// ---- construction ----------------------------------------------------------------------------

Seq2Seq::Seq2Seq(const Seq2SeqConfig& config, Rng& rng) : config_(config) {
  config.validate();
  const Seq2SeqConfig& c = config_;
  const int64_t E = c.embed_dim, H = c.hidden, dirs = c.bidirectional ? 2 : 1, Dv = c.memory_dim();
  const int64_t Dd = c.dec_hidden;
  src_embed_ = nn::Embedding(c.src_vocab, E, "encoder/embedding", rng, 1.0f, data::kPad);
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
  tgt_embed_ = nn::Embedding(c.tgt_vocab, E, "decoder/embedding", rng, 1.0f, data::kPad);
  decoder_ = nn::AttentionDecoder(decoder_config(c), "decoder", rng);
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
  enc.attn = m.decoder_.prepare(enc.memory, enc.src_len);
  return enc;
}

void Seq2SeqImpl::encode_backward(Seq2Seq& m, const Encoded& enc, Tensor dmemory, const Tensor& ds0,
                                  EncoderCache& cache) {
  const Seq2SeqConfig& c = m.config_;
  const int64_t B = dmemory.dim(0), S = dmemory.dim(1), Dv = dmemory.dim(2), H = c.hidden;
  const int64_t dirs = c.bidirectional ? 2 : 1;
  const int32_t* len = enc.src_len.idata();
  const Tensor dfinal = m.bridge_.backward(ops::tanh_backward(ds0, cache.bridge_tanh), cache.bridge);
  nn::announce_final(m.bridge_.params());
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
      nn::announce_final(er.rnn.params());
      if (er.self_attn) nn::announce_final(er.self_attn->params());
      if (d == 0) dxl = dxin;
      else add_into(dxl.data(), reverse_within(dxin, len).data(), dxl.numel());
    }
    dx = l > 0 ? ops::dropout_backward(dxl, lc.drop) : dxl;
  }
  m.src_embed_.backward(dx, cache.embed);
}

// ---- decoder ---------------------------------------------------------------------------------

namespace {

// The teacher-forced forward (scheduled sampling when training with teacher_forcing < 1):
// fills run.enc, run.O and run.logits; with caches, everything backward needs.
void run_forward(const Seq2Seq& m, const Seq2SeqConfig& c, const nn::Embedding& tgt_embed,
                 const nn::AttentionDecoder& decoder, const nn::Linear& output, const data::TokenBatch& batch,
                 bool training, bool keep_caches, Rng& rng, Impl::Run& run, float* alignment) {
  Impl::check_source(m, batch.src, batch.src_len, "seq2seq");
  const int64_t B = batch.src.dim(0), S = batch.src.dim(1);
  check_tensor(batch.tgt, {B, kAny}, "seq2seq: tgt [B, T]", DType::i32);
  check_tensor(batch.tgt_len, {B}, "seq2seq: tgt_len [B]", DType::i32);
  const int64_t T = batch.tgt.dim(1), E = c.embed_dim, Dd = c.dec_hidden, Dc = c.context_dim();
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
      in[t * B + b] = t == 0 ? data::kBos : tgt[b * T + t - 1];
      tg[t * B + b] = t < tlen[b] ? tgt[b * T + t] : -1;
    }
  }
  run.emb = tgt_embed.forward(run.ids_in, keep_caches ? &run.tgt_embed : nullptr).reshape({T * B, E});
  run.gx = Tensor({T * B, G});
  decoder.project_input(run.emb.data(), E, T * B, run.gx.data());
  run.O = Tensor({T * B, Do});
  if (keep_caches) run.dec = decoder.make_cache(T, B);

  nn::AttentionDecoderState st = decoder.initial_state(run.enc.s0);
  const bool bahdanau = c.attention_style == AttentionStyle::bahdanau;
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
      decoder.project_input(e_t.data(), E, B, run.gx.data() + t * B * G);
    }
    float* o_t = run.O.data() + t * B * Do;
    const Tensor w =
        decoder.step(t, run.gx.data() + t * B * G, st, run.enc.attn, o_t, Do, keep_caches ? &run.dec : nullptr);
    if (bahdanau) copy_rows(run.emb.data() + t * B * E, E, o_t + Dd + Dc, Do, B, E);   // o_t = [s_t; c_t; e_t]
    if (alignment != nullptr && w.defined())
      for (int64_t b = 0; b < B; ++b)
        std::memcpy(alignment + (b * T + t) * S, w.data() + b * S, static_cast<size_t>(S) * sizeof(float));
  }
  const Tensor o = ops::dropout_forward(run.O, c.dropout, training, rng, keep_caches ? &run.out_drop : nullptr);
  run.logits = output.forward(o, keep_caches ? &run.out : nullptr);
}

}  // namespace

data::LossStats Seq2Seq::train_step(const data::TokenBatch& batch, Rng& dropout_rng) {
  const Seq2SeqConfig& c = config_;
  Impl::Run run;
  run_forward(*this, c, tgt_embed_, decoder_, output_, batch, /*training=*/true, /*keep_caches=*/true, dropout_rng,
              run, nullptr);
  // The loss and its gradient in one op; the gradient overwrites the logits.
  const data::LossStats stats = data::loss_stats(ops::cross_entropy_forward_backward_inplace(
      run.logits, run.targets, {/*ignore_index=*/-1, c.label_smoothing}, 1.0f));
  nn::announce_loss_count(static_cast<double>(stats.tokens));
  if (stats.tokens == 0) return stats;

  const int64_t B = run.B, S = run.S, T = run.T, E = c.embed_dim, Dd = c.dec_hidden, Dc = c.context_dim();
  const int64_t Do = c.output_input_dim();
  // logits = dropout(O) W_o^T + b_o, one GEMM each way for all T*B rows.
  const Tensor dO = ops::dropout_backward(output_.backward(run.logits, run.out), run.out_drop);
  nn::announce_final(output_.params());   // data-parallel training sends what is final (nn/grad_ready.hpp)
  run.logits = Tensor();

  // The decoder's steps in reverse, then its weight gradients over all T*B rows.
  nn::AttentionDecoderGrad grad = decoder_.begin_backward(run.enc.attn, T, B);
  Tensor dEmb({T * B, E});
  if (c.attention_style == AttentionStyle::bahdanau)
    copy_rows(dO.data() + Dd + Dc, Do, dEmb.data(), E, T * B, E);   // o_t's e_t part
  for (int64_t t = T - 1; t >= 0; --t)
    decoder_.step_backward(t, dO.data() + t * B * Do, Do, run.O.data() + t * B * Do, Do, run.dec, run.enc.attn, grad);
  decoder_.end_backward(run.O.data(), Do, run.dec, run.enc.attn, grad);
  decoder_.input_backward(grad, run.emb.data(), E, dEmb.data(), E);
  nn::announce_final(decoder_.params());
  tgt_embed_.backward(dEmb.reshape({T, B, E}), run.tgt_embed);
  nn::announce_final(tgt_embed_.params());

  const Tensor dmemory = decoder_.attention() ? grad.memory.dkeys : Tensor({B, S, c.memory_dim()});
  Impl::encode_backward(*this, run.enc, dmemory, grad.dstate.h, run.encoder);
  return stats;
}

data::LossStats Seq2Seq::evaluate(const data::TokenBatch& batch) const {
  Impl::Run run;
  Rng unused(0);
  run_forward(*this, config_, tgt_embed_, decoder_, output_, batch, /*training=*/false, /*keep_caches=*/false,
              unused, run, nullptr);
  return data::loss_stats(
      ops::cross_entropy_forward(run.logits, run.targets, {/*ignore_index=*/-1, config_.label_smoothing}, nullptr));
}

Tensor Seq2Seq::logits(const data::TokenBatch& batch, Tensor* alignment) const {
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

}  // namespace attn::seq2seq

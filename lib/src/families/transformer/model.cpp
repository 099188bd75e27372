// The Transformer model: embeddings, the encoder and decoder stacks, the output projection and
// the fused loss; the teacher-forced training step (forward, then its steps in reverse), and
// the inference entry points that attn::decode builds on.
#include "attn/families/transformer/model.hpp"

#include <cmath>

#include "attn/blas/blas.hpp"
#include "attn/nn/attention_decoder.hpp"   // nn::gather_rows
#include "attn/nn/grad_ready.hpp"
#include "attn/ops/cross_entropy.hpp"
#include "attn/ops/elementwise.hpp"

namespace attn::transformer {

struct Transformer::EmbedCache {
  ops::EmbeddingCache tokens, segments;
  Tensor segment_ids;   // the zeros used when a batch has no segments
  ops::DropoutCache drop;
  // cmlm with DecoderInputs::copy: the source table's lookup and the rows it fills ([MASK]s)
  ops::EmbeddingCache copied;
  std::vector<uint8_t> copied_rows;
};

struct Transformer::StepCache {
  EmbedCache src, tgt;
  std::vector<nn::EncoderLayer::Cache> enc;
  std::vector<nn::DecoderLayer::Cache> dec;
  ops::LayerNormCache enc_norm, dec_norm;
  ops::LinearCache out;
  ops::LinearCache length;   // cmlm: the length predictor
  Tensor logits;   // [B*T, V], reused from step to step (its gradient overwrites it in place)
};

namespace {

Rng& unused_rng() {   // inference draws nothing, but the ops take an Rng by reference
  thread_local Rng rng(0);
  return rng;
}

// [BOS, tgt_0, ..., tgt_{T-2}]: the teacher-forced decoder input.   tgt: int32 [B, T]
Tensor shift_right(const Tensor& tgt) {
  const int64_t B = tgt.dim(0), T = tgt.dim(1);
  Tensor out({B, T}, DType::i32);
  const int32_t* t = tgt.idata();
  int32_t* o = out.idata();
  for (int64_t b = 0; b < B; ++b) {
    o[b * T] = data::kBos;
    std::copy(t + b * T, t + b * T + T - 1, o + b * T + 1);
  }
  return out;
}

// lengths + 1: the cmlm encoder's, [LENGTH] included.   lengths: int32 [B]
Tensor plus_one(const Tensor& lengths) {
  Tensor out = lengths.clone();
  for (int64_t b = 0; b < out.numel(); ++b) ++out.idata()[b];
  return out;
}

// x[:, 0, :] -> [B, D], and its adjoint, adding dy [B, D] into dx[:, 0, :].   x: [B, L, D]
Tensor first_positions(const Tensor& x) {
  const int64_t B = x.dim(0), L = x.dim(1), D = x.dim(2);
  Tensor out = Tensor::uninitialized({B, D});
  for (int64_t b = 0; b < B; ++b) std::copy_n(x.data() + b * L * D, D, out.data() + b * D);
  return out;
}
void add_to_first_positions(Tensor& dx, const Tensor& dy) {
  const int64_t B = dx.dim(0), L = dx.dim(1), D = dx.dim(2);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < D; ++j) dx.data()[b * L * D + j] += dy.data()[b * D + j];
}

void scale_inplace(Tensor& x, float alpha) {
  float* p = x.data();
  const int64_t n = x.numel();
#pragma omp parallel for simd schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) p[i] *= alpha;
}


}  // namespace

Transformer::~Transformer() = default;
Transformer::Transformer(Transformer&&) noexcept = default;
Transformer& Transformer::operator=(Transformer&&) noexcept = default;

Transformer::Transformer(const TransformerConfig& config, Rng& rng) : config_(config) {
  config_.validate();
  const TransformerConfig& c = config_;
  const int64_t D = c.d_model;
  const float emb_std = 1.0f / std::sqrt(static_cast<float>(D));   // sqrt(D) * table ~ N(0, 1)
  const bool has_encoder = c.arch != TransformerArch::lm, has_decoder = c.arch != TransformerArch::mlm;

  // cmlm: + [MASK] in the target table, + [LENGTH] in the source table (both, one shared table).
  const int64_t mask_row = c.arch == TransformerArch::mlm || c.arch == TransformerArch::cmlm ? 1 : 0;
  const int64_t length_row = c.arch == TransformerArch::cmlm ? 1 : 0;
  if (c.encoder_decoder() && !c.shared_vocab()) {
    src_embed_ = nn::Embedding(c.src_vocab + length_row, D, "src_embed", rng, emb_std, data::kPad);
    tgt_embed_ = nn::Embedding(c.tgt_vocab + mask_row, D, "tgt_embed", rng, emb_std, data::kPad);
  } else {
    tgt_embed_ = nn::Embedding(c.tgt_vocab + mask_row + length_row, D, "embed", rng, emb_std, data::kPad);
  }
  if (c.arch == TransformerArch::mlm) segment_embed_.emplace(2, D, "segment_embed", rng, emb_std);
  if (c.pos_encoding == PositionalKind::learned) {
    if (has_encoder) enc_pos_.emplace(c.max_len, D, "encoder/positions", rng);
    if (has_decoder) dec_pos_.emplace(c.max_len, D, "decoder/positions", rng);
  } else {
    sinusoid_ = nn::sinusoidal_encoding(c.max_len, D);
  }

  const nn::LayerOptions lo{D, c.heads, c.d_ff, c.dropout, c.norm};
  if (has_encoder) {
    encoder_.reserve(static_cast<size_t>(c.enc_layers));
    for (int64_t i = 0; i < c.enc_layers; ++i) encoder_.emplace_back(lo, "encoder/layer" + std::to_string(i), rng);
    if (c.norm == nn::NormPosition::pre) enc_norm_.emplace(D, "encoder/final_norm");
  }
  if (has_decoder) {
    decoder_.reserve(static_cast<size_t>(c.dec_layers));
    for (int64_t i = 0; i < c.dec_layers; ++i)
      decoder_.emplace_back(lo, c.encoder_decoder(), "decoder/layer" + std::to_string(i), rng);
    if (c.norm == nn::NormPosition::pre) dec_norm_.emplace(D, "decoder/final_norm");
  }
  if (!c.tie_output()) output_.emplace(D, c.tgt_vocab, "output", rng);
  else tgt_embed_.table.sparse_rows = false;   // the output layer adds to every row (nn/grad_ready.hpp)
  if (c.arch == TransformerArch::cmlm) length_.emplace(D, c.length_classes(), "length", rng);
}

bool Transformer::shared_embed() const { return !config_.encoder_decoder() || config_.shared_vocab(); }

int32_t Transformer::length_token_id() const {
  if (config_.arch != TransformerArch::cmlm) throw ConfigError("transformer: only a cmlm model has a [LENGTH] token");
  return static_cast<int32_t>(config_.shared_vocab() ? config_.tgt_vocab + 1 : config_.src_vocab);
}

ParamList Transformer::params() {
  ParamList list;
  if (!shared_embed()) nn::append(list, src_embed_.params());
  nn::append(list, tgt_embed_.params());
  if (segment_embed_) nn::append(list, segment_embed_->params());
  if (enc_pos_) nn::append(list, enc_pos_->params());
  if (dec_pos_) nn::append(list, dec_pos_->params());
  for (nn::EncoderLayer& l : encoder_) nn::append(list, l.params());
  if (enc_norm_) nn::append(list, enc_norm_->params());
  for (nn::DecoderLayer& l : decoder_) nn::append(list, l.params());
  if (dec_norm_) nn::append(list, dec_norm_->params());
  if (output_) nn::append(list, output_->params());
  if (length_) nn::append(list, length_->params());
  return list;
}

// ---- forward pieces ---------------------------------------------------------------------------

ops::AttentionMask Transformer::self_mask(const Tensor& lengths, bool causal) const {
  ops::AttentionMask m;
  m.key_lengths = lengths;
  m.causal = causal;
  m.window = config_.attn_window;
  return m;
}

Tensor Transformer::embed(const nn::Embedding& table, const std::optional<nn::LearnedPositionalEmbedding>& pos,
                          const Tensor& ids, const Tensor& segments, int64_t offset, bool training, Rng& rng,
                          EmbedCache* cache) const {
  const int64_t L = ids.dim(1);
  if (offset + L > config_.max_len)
    throw ShapeError("transformer: positions [" + std::to_string(offset) + ", " + std::to_string(offset + L) +
                     ") exceed max_len " + std::to_string(config_.max_len) + " (raise max_len)");
  if (cache) cache->copied_rows.clear();
  return finish_embedding(table.forward(ids, cache ? &cache->tokens : nullptr), pos, ids, segments, offset, training,
                          rng, cache);
}

Tensor Transformer::finish_embedding(Tensor x, const std::optional<nn::LearnedPositionalEmbedding>& pos,
                                     const Tensor& ids, const Tensor& segments, int64_t offset, bool training, Rng& rng,
                                     EmbedCache* cache) const {
  scale_inplace(x, std::sqrt(static_cast<float>(config_.d_model)));
  if (segment_embed_) {
    Tensor seg = segments;
    if (seg.empty()) seg = Tensor(ids.shape(), DType::i32);
    if (cache) cache->segment_ids = seg;
    ops::accumulate(x, segment_embed_->forward(seg, cache ? &cache->segments : nullptr));
  }
  nn::add_positional_encoding(x, pos ? pos->table.value : sinusoid_, offset);
  return ops::dropout_forward(x, config_.dropout, training, rng, cache ? &cache->drop : nullptr);
}

void Transformer::embed_backward(const Tensor& dx, nn::Embedding& table,
                                 std::optional<nn::LearnedPositionalEmbedding>& pos, const EmbedCache& cache) {
  const Tensor d = ops::dropout_backward(dx, cache.drop);
  if (pos) pos->backward(d);
  if (segment_embed_) segment_embed_->backward(d, cache.segments);
  Tensor dtokens = ops::scale_forward(d, std::sqrt(static_cast<float>(config_.d_model)));
  if (!cache.copied_rows.empty()) {   // the copied rows' gradient goes to the source table
    const int64_t D = config_.d_model;
    Tensor dcopied(dtokens.shape());
    for (size_t r = 0; r < cache.copied_rows.size(); ++r)
      if (cache.copied_rows[r]) {
        float* row = dtokens.data() + static_cast<int64_t>(r) * D;
        std::copy_n(row, D, dcopied.data() + static_cast<int64_t>(r) * D);
        std::fill_n(row, D, 0.0f);
      }
    src_embedding().backward(dcopied, cache.copied);
  }
  table.backward(dtokens, cache.tokens);
}

Tensor Transformer::run_encoder(const Tensor& src, const Tensor& src_len, const Tensor& segments, bool training,
                                Rng& rng, StepCache* cache, std::vector<Tensor>* self) const {
  Tensor x = embed(src_embedding(), enc_pos_, src, segments, 0, training, rng, cache ? &cache->src : nullptr);
  const ops::AttentionMask mask = self_mask(src_len, /*causal=*/false);
  if (cache) cache->enc.resize(encoder_.size());
  if (self) self->assign(encoder_.size(), Tensor());
  for (size_t l = 0; l < encoder_.size(); ++l)
    x = encoder_[l].forward(x, mask, training, rng, cache ? &cache->enc[l] : nullptr, self ? &(*self)[l] : nullptr);
  if (enc_norm_) x = enc_norm_->forward(x, cache ? &cache->enc_norm : nullptr);
  return x;
}

Tensor Transformer::run_decoder(const Tensor& dec_in, const Tensor& dec_len, const Tensor& memory,
                                const Tensor& src_len, bool training, Rng& rng, StepCache* cache,
                                std::vector<Tensor>* self, std::vector<Tensor>* cross) const {
  return decoder_layers(embed(tgt_embed_, dec_pos_, dec_in, {}, 0, training, rng, cache ? &cache->tgt : nullptr),
                        dec_len, memory, src_len, training, rng, cache, self, cross);
}

Tensor Transformer::nat_decoder(const Tensor& dec_in, const Tensor& tgt_len, const Tensor& memory, const Tensor& src,
                                const Tensor& src_len, bool training, Rng& rng, StepCache* cache,
                                std::vector<Tensor>* self, std::vector<Tensor>* cross) const {
  const Tensor memory_len = plus_one(src_len);
  if (config_.decoder_inputs == DecoderInputs::mask)
    return run_decoder(dec_in, tgt_len, memory, memory_len, training, rng, cache, self, cross);
  // Copy: the [MASK] rows of the target table's lookup replaced by the source table's rows of the
  // uniformly copied source tokens.
  EmbedCache* ec = cache ? &cache->tgt : nullptr;
  const int64_t T = dec_in.dim(1), D = config_.d_model;
  Tensor x = tgt_embed_.forward(dec_in, ec ? &ec->tokens : nullptr);
  const Tensor copied = src_embedding().forward(uniform_copy_ids(src, src_len, tgt_len, T), ec ? &ec->copied : nullptr);
  std::vector<uint8_t> rows(static_cast<size_t>(dec_in.numel()));
  const int32_t mask = mask_token_id();
  for (int64_t r = 0; r < dec_in.numel(); ++r)
    if (dec_in.idata()[r] == mask) {
      rows[static_cast<size_t>(r)] = 1;
      std::copy_n(copied.data() + r * D, D, x.data() + r * D);
    }
  if (ec) ec->copied_rows = std::move(rows);
  return decoder_layers(finish_embedding(std::move(x), dec_pos_, dec_in, {}, 0, training, rng, ec), tgt_len, memory,
                        memory_len, training, rng, cache, self, cross);
}

Tensor Transformer::decoder_layers(Tensor x, const Tensor& dec_len, const Tensor& memory, const Tensor& src_len,
                                   bool training, Rng& rng, StepCache* cache, std::vector<Tensor>* self,
                                   std::vector<Tensor>* cross) const {
  // CMLM's decoder sees the whole target (Ghazvininejad et al. 2019, sec. 3.1).
  const ops::AttentionMask smask = self_mask(dec_len, /*causal=*/config_.arch != TransformerArch::cmlm);
  const ops::AttentionMask cmask = ops::AttentionMask::padding(src_len);
  if (cache) cache->dec.resize(decoder_.size());
  if (self) self->assign(decoder_.size(), Tensor());
  if (cross) cross->assign(decoder_.size(), Tensor());
  for (size_t l = 0; l < decoder_.size(); ++l)
    x = decoder_[l].forward(x, memory, smask, cmask, training, rng, cache ? &cache->dec[l] : nullptr,
                            self ? &(*self)[l] : nullptr,
                            cross && decoder_[l].has_cross_attention() ? &(*cross)[l] : nullptr);
  if (dec_norm_) x = dec_norm_->forward(x, cache ? &cache->dec_norm : nullptr);
  return x;
}

void Transformer::check_batch(const data::TokenBatch& batch) const {
  const bool uses_src = config_.arch != TransformerArch::lm, uses_tgt = config_.arch != TransformerArch::mlm;
  int64_t B = kAny;
  if (uses_src) {
    check_tensor(batch.src, {kAny, kAny}, "transformer: src [B, S]", DType::i32);
    B = batch.src.dim(0);
    check_tensor(batch.src_len, {B}, "transformer: src_len [B]", DType::i32);
  }
  if (config_.arch == TransformerArch::mlm) {
    check_tensor(batch.tgt, batch.src.shape(), "transformer: mlm targets tgt [B, S]", DType::i32);
    if (!batch.segments.empty())
      check_tensor(batch.segments, batch.src.shape(), "transformer: segments [B, S]", DType::i32);
  }
  if (uses_tgt) {
    check_tensor(batch.tgt, {B, kAny}, "transformer: tgt [B, T]", DType::i32);
    check_tensor(batch.tgt_len, {batch.tgt.dim(0)}, "transformer: tgt_len [B]", DType::i32);
  }
}

Tensor Transformer::output_logits(const Tensor& hidden) const {
  const int64_t D = config_.d_model, V = config_.tgt_vocab;
  if (hidden.rank() < 1 || hidden.dim(-1) != D)
    throw ShapeError("transformer: hidden [..., D] has shape " + to_string(hidden.shape()) + ", expected [..., " +
                     std::to_string(D) + "]");
  Shape out_shape = hidden.shape();
  out_shape.back() = V;
  const Tensor h = hidden.reshape({kAny, D});
  const Tensor y = output_ ? output_->forward(h, nullptr)
                           : ops::linear_forward(h, tgt_embed_.table.value.rows(0, V), Tensor(), nullptr);
  return y.reshape(out_shape);
}

Tensor Transformer::body(const data::TokenBatch& batch, bool training, Rng& rng, StepCache* cache,
                         std::vector<Tensor>* self) const {
  switch (config_.arch) {
    case TransformerArch::encdec: {
      const Tensor memory = run_encoder(batch.src, batch.src_len, {}, training, rng, cache);
      return run_decoder(shift_right(batch.tgt), batch.tgt_len, memory, batch.src_len, training, rng, cache, self);
    }
    case TransformerArch::lm:
      return run_decoder(shift_right(batch.tgt), batch.tgt_len, {}, {}, training, rng, cache, self);
    case TransformerArch::mlm:
      return run_encoder(batch.src, batch.src_len, batch.segments, training, rng, cache, self);
    case TransformerArch::cmlm:
      break;
  }
  throw ConfigError("transformer: a cmlm model trains and evaluates on masked targets (transformer::cmlm_mask)");
}

Tensor Transformer::forward_logits(const data::TokenBatch& batch, bool training, Rng& rng, StepCache* cache,
                                   Tensor* targets) const {
  check_batch(batch);
  const Tensor h = body(batch, training, rng, cache);
  *targets = batch.tgt.reshape({kAny});
  return project(h, cache);
}

Tensor Transformer::project(const Tensor& h, StepCache* cache) const {
  // One GEMM [B*T, D] x [D, V]; tied: the first V rows of the target embedding table.
  const int64_t D = config_.d_model, V = config_.tgt_vocab;
  const Tensor h2 = h.reshape({kAny, D});
  if (cache == nullptr) return output_logits(h2);
  // Training reuses one logits buffer: at B*T*V floats it is the largest tensor of a step, and
  // a fresh one each step would cost a page fault per 4 KiB.
  const int64_t N = h2.dim(0);
  if (cache->logits.numel() < N * V) cache->logits = Tensor({N * V});
  Tensor logits = cache->logits.reshape({kAny}).rows(0, N * V).reshape({N, V});
  const float beta = output_ ? 1.0f : 0.0f;
  if (output_)
    for (int64_t i = 0; i < N; ++i) std::copy_n(output_->b.value.data(), V, logits.data() + i * V);
  const float* W = output_ ? output_->W.value.data() : tgt_embed_.table.value.data();
  blas::gemm(blas::Trans::N, blas::Trans::T, N, V, D, 1.0f, h2.data(), D, W, D, beta, logits.data(), V);
  cache->out.x = h2;
  return logits;
}

// ---- training ---------------------------------------------------------------------------------

Tensor Transformer::output_backward(const Tensor& dlogits, const ops::LinearCache& cache) {
  if (output_) {
    Tensor dh = output_->backward(dlogits, cache);
    nn::announce_final(output_->params());
    return dh;
  }
  const int64_t V = config_.tgt_vocab;
  Tensor dW = tgt_embed_.table.grad.rows(0, V);   // a view: adds into the table's gradient
  Tensor no_bias;
  return ops::linear_backward(dlogits, tgt_embed_.table.value.rows(0, V), cache, dW, no_bias);
}

// Announces each layer's gradients final as the backward passes below it (nn/grad_ready.hpp), so
// that data-parallel training can send them while the layers beneath are computed.
Tensor Transformer::decoder_backward(Tensor dh, StepCache& c) {
  if (dec_norm_) {
    dh = dec_norm_->backward(dh, c.dec_norm);
    nn::announce_final(dec_norm_->params());
  }
  Tensor dmemory;
  for (size_t l = decoder_.size(); l-- > 0;) {
    nn::DecoderLayer::Grads g = decoder_[l].backward(dh, c.dec[l]);
    nn::announce_final(decoder_[l].params());
    dh = std::move(g.dx);
    if (!g.dmemory.empty()) {
      if (dmemory.empty())
        dmemory = std::move(g.dmemory);
      else
        ops::accumulate(dmemory, g.dmemory);
    }
  }
  embed_backward(dh, tgt_embed_, dec_pos_, c.tgt);
  if (!shared_embed()) nn::announce_final(tgt_embed_.params());   // else the encoder adds to it too
  if (dec_pos_) nn::announce_final(dec_pos_->params());
  return dmemory;
}

void Transformer::encoder_backward(Tensor dx, StepCache& c) {
  if (enc_norm_) {
    dx = enc_norm_->backward(dx, c.enc_norm);
    nn::announce_final(enc_norm_->params());
  }
  for (size_t l = encoder_.size(); l-- > 0;) {
    dx = encoder_[l].backward(dx, c.enc[l]);
    nn::announce_final(encoder_[l].params());
  }
  embed_backward(dx, shared_embed() ? tgt_embed_ : src_embed_, enc_pos_, c.src);
}

data::LossStats Transformer::train_step(const data::TokenBatch& batch, Rng& dropout_rng) {
  if (!cache_) cache_ = std::make_unique<StepCache>();
  StepCache& c = *cache_;
  Tensor targets;
  Tensor logits = forward_logits(batch, /*training=*/true, dropout_rng, &c, &targets);   // [B*T, V]
  const ops::CrossEntropyOptions ce_options{data::kPad, config_.label_smoothing};
  // The loss and its gradient in one op; the gradient overwrites the logits.
  const data::LossStats stats = data::loss_stats(
      ops::cross_entropy_forward_backward_inplace(logits, targets, ce_options, 1.0f));
  nn::announce_loss_count(static_cast<double>(stats.tokens));

  // Backward: the forward's steps in reverse.
  const Tensor& dlogits = logits;
  const int64_t D = config_.d_model;
  switch (config_.arch) {
    case TransformerArch::encdec: {
      const Tensor dh = output_backward(dlogits, c.out).reshape({batch.tgt.dim(0), batch.tgt.dim(1), D});
      encoder_backward(decoder_backward(dh, c), c);
      break;
    }
    case TransformerArch::lm:
      decoder_backward(output_backward(dlogits, c.out).reshape({batch.tgt.dim(0), batch.tgt.dim(1), D}), c);
      break;
    case TransformerArch::mlm:
      encoder_backward(output_backward(dlogits, c.out).reshape({batch.src.dim(0), batch.src.dim(1), D}), c);
      break;
    case TransformerArch::cmlm:   // body() refused it
      break;
  }
  return stats;
}

data::LossStats Transformer::evaluate(const data::TokenBatch& batch) const {
  Tensor targets;
  const Tensor logits = forward_logits(batch, /*training=*/false, unused_rng(), nullptr, &targets);
  const ops::CrossEntropyOptions ce_options{data::kPad, config_.label_smoothing};
  return data::loss_stats(ops::cross_entropy_forward(logits, targets, ce_options, nullptr));
}

Tensor Transformer::logits(const data::TokenBatch& batch) const {
  Tensor targets;
  const Tensor y = forward_logits(batch, /*training=*/false, unused_rng(), nullptr, &targets);
  return y.reshape({batch.tgt.dim(0), batch.tgt.dim(1), config_.tgt_vocab});
}

// ---- cmlm ---------------------------------------------------------------------------------------

Tensor Transformer::with_length_token(const Tensor& src) const {
  const int64_t B = src.dim(0), S = src.dim(1);
  Tensor out({B, S + 1}, DType::i32);
  const int32_t id = length_token_id();
  for (int64_t b = 0; b < B; ++b) {
    out.idata()[b * (S + 1)] = id;
    std::copy_n(src.idata() + b * S, S, out.idata() + b * (S + 1) + 1);
  }
  return out;
}

namespace {

// The length predictor's classes: offset |y| - |x| + max_len.   int32 [B]
Tensor length_targets(const Tensor& src_len, const Tensor& tgt_len, int64_t max_len) {
  const int64_t B = src_len.dim(0);
  Tensor out({B}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    out.idata()[b] = static_cast<int32_t>(tgt_len.idata()[b] - src_len.idata()[b] + max_len);
  return out;
}

// The positions a cmlm batch scores (targets not PAD: the masked ones), in order, and their
// targets: only their hidden states are projected onto the vocabulary, the others' logits would
// get no gradient.
struct ScoredRows {
  std::vector<int64_t> rows;
  Tensor targets;   // int32 [M]
};
ScoredRows scored_rows(const Tensor& targets) {
  ScoredRows out;
  std::vector<int32_t> t;
  for (int64_t i = 0; i < targets.numel(); ++i)
    if (targets.idata()[i] != data::kPad) {
      out.rows.push_back(i);
      t.push_back(targets.idata()[i]);
    }
  out.targets = Tensor::from_ints({static_cast<int64_t>(t.size())}, t);
  return out;
}

// nn::gather_rows' adjoint for [M, D] rows: dy's rows into rows `rows` of a zero [N, D].
Tensor scatter_rows(const Tensor& dy, const std::vector<int64_t>& rows, int64_t N) {
  const int64_t D = dy.dim(1);
  Tensor out({N, D});
  for (size_t r = 0; r < rows.size(); ++r)
    std::copy_n(dy.data() + static_cast<int64_t>(r) * D, D, out.data() + rows[r] * D);
  return out;
}

// The objective's sums: the masked tokens' (counted), loss_sum = (token mean + weight x length mean)
// x their count, so that loss_sum / tokens is the objective.
data::LossStats cmlm_stats(const ops::CrossEntropyResult& tokens, const ops::CrossEntropyResult& lengths,
                           float weight) {
  data::LossStats s = data::loss_stats(tokens);
  if (lengths.count > 0)
    s.loss_sum += static_cast<double>(weight) * lengths.sum / static_cast<double>(lengths.count) *
                  static_cast<double>(tokens.count);
  return s;
}

}  // namespace

Tensor Transformer::cmlm_forward(const CmlmBatch& batch, bool training, Rng& rng, StepCache* cache,
                                 Tensor* length_logits) const {
  if (config_.arch != TransformerArch::cmlm)
    throw ConfigError("transformer: a masked-target batch needs a cmlm model, this one is '" +
                      std::string(arch_name(config_.arch)) + "'");
  check_tensor(batch.src, {kAny, kAny}, "transformer: src [B, S]", DType::i32);
  const int64_t B = batch.src.dim(0);
  check_tensor(batch.src_len, {B}, "transformer: src_len [B]", DType::i32);
  check_tensor(batch.dec_in, {B, kAny}, "transformer: cmlm dec_in [B, T]", DType::i32);
  check_tensor(batch.targets, batch.dec_in.shape(), "transformer: cmlm targets [B, T]", DType::i32);
  check_tensor(batch.tgt_len, {B}, "transformer: tgt_len [B]", DType::i32);
  const Tensor memory_len = plus_one(batch.src_len);
  const Tensor memory = run_encoder(with_length_token(batch.src), memory_len, {}, training, rng, cache);
  *length_logits = length_->forward(first_positions(memory), cache ? &cache->length : nullptr);   // [B, C]
  return nat_decoder(batch.dec_in, batch.tgt_len, memory, batch.src, batch.src_len, training, rng, cache)
      .reshape({kAny, config_.d_model});
}

data::LossStats Transformer::train_step(const CmlmBatch& batch, Rng& dropout_rng) {
  if (!cache_) cache_ = std::make_unique<StepCache>();
  StepCache& c = *cache_;
  Tensor length_logits;
  const Tensor h = cmlm_forward(batch, /*training=*/true, dropout_rng, &c, &length_logits);   // [B*T, D]
  const ScoredRows scored = scored_rows(batch.targets);
  Tensor logits = project(nn::gather_rows(h, scored.rows), &c);   // [M, V]: the scored positions only
  const Tensor len_targets = length_targets(batch.src_len, batch.tgt_len, config_.max_len);
  // The masked tokens' mean and weight x the lengths' mean, each op writing its gradient in place.
  const ops::CrossEntropyResult tokens = ops::cross_entropy_forward_backward_inplace(
      logits, scored.targets, {data::kPad, config_.label_smoothing}, 1.0f);
  const ops::CrossEntropyResult lengths = ops::cross_entropy_forward_backward_inplace(length_logits, len_targets, {},
                                                                                      config_.length_weight());
  const data::LossStats stats = cmlm_stats(tokens, lengths, config_.length_weight());
  nn::announce_loss_count(static_cast<double>(stats.tokens));

  // Backward: the forward's steps in reverse.
  const Tensor dh = scatter_rows(output_backward(logits, c.out), scored.rows, h.dim(0))
                        .reshape({batch.dec_in.dim(0), batch.dec_in.dim(1), config_.d_model});
  Tensor dmemory = decoder_backward(dh, c);
  add_to_first_positions(dmemory, length_->backward(length_logits, c.length));
  nn::announce_final(length_->params());
  encoder_backward(std::move(dmemory), c);
  return stats;
}

data::LossStats Transformer::evaluate(const CmlmBatch& batch) const {
  Tensor length_logits;
  const Tensor h = cmlm_forward(batch, /*training=*/false, unused_rng(), nullptr, &length_logits);
  const ScoredRows scored = scored_rows(batch.targets);
  const Tensor logits = output_logits(nn::gather_rows(h, scored.rows));
  const Tensor len_targets = length_targets(batch.src_len, batch.tgt_len, config_.max_len);
  return cmlm_stats(ops::cross_entropy_forward(logits, scored.targets, {data::kPad, config_.label_smoothing}, nullptr),
                    ops::cross_entropy_forward(length_logits, len_targets, {}, nullptr), config_.length_weight());
}

Tensor Transformer::length_logits(const Tensor& memory) const {
  if (config_.arch != TransformerArch::cmlm) throw ConfigError("transformer: only a cmlm model predicts lengths");
  check_tensor(memory, {kAny, kAny, config_.d_model}, "transformer: memory [B, 1 + S, D]");
  return length_->forward(first_positions(memory), nullptr);
}

Tensor Transformer::nat_logits(const Tensor& tokens, const Tensor& tgt_len, const Tensor& memory, const Tensor& src,
                               const Tensor& src_len, std::vector<Tensor>* self, std::vector<Tensor>* cross) const {
  if (config_.arch != TransformerArch::cmlm)
    throw ConfigError("transformer: nat_logits needs a cmlm model, this one is '" +
                      std::string(arch_name(config_.arch)) + "'");
  check_tensor(tokens, {kAny, kAny}, "transformer: nat tokens [B, T]", DType::i32);
  const int64_t B = tokens.dim(0);
  check_tensor(tgt_len, {B}, "transformer: tgt_len [B]", DType::i32);
  check_tensor(memory, {B, kAny, config_.d_model}, "transformer: memory [B, 1 + S, D]");
  check_tensor(src, {B, memory.dim(1) - 1}, "transformer: src [B, S]", DType::i32);
  check_tensor(src_len, {B}, "transformer: src_len [B]", DType::i32);
  const Tensor h = nat_decoder(tokens, tgt_len, memory, src, src_len, /*training=*/false, unused_rng(), nullptr, self,
                               cross);
  return output_logits(h);
}

// ---- fine-tuning ------------------------------------------------------------------------------

void Transformer::check_head_batch(const data::TokenBatch& batch) const {
  switch (config_.arch) {
    case TransformerArch::encdec:
    case TransformerArch::cmlm:
      throw ConfigError("transformer: a task head needs a pre-trained lm or mlm body, not an encoder-decoder");
    case TransformerArch::lm:
      check_tensor(batch.tgt, {kAny, kAny}, "transformer: tgt [B, T]", DType::i32);
      check_tensor(batch.tgt_len, {batch.tgt.dim(0)}, "transformer: tgt_len [B]", DType::i32);
      break;
    case TransformerArch::mlm:
      check_tensor(batch.src, {kAny, kAny}, "transformer: src [B, S]", DType::i32);
      check_tensor(batch.src_len, {batch.src.dim(0)}, "transformer: src_len [B]", DType::i32);
      if (!batch.segments.empty())
        check_tensor(batch.segments, batch.src.shape(), "transformer: segments [B, S]", DType::i32);
      break;
  }
}

Tensor Transformer::hidden(const data::TokenBatch& batch, std::vector<Tensor>* self) const {
  check_head_batch(batch);
  return body(batch, /*training=*/false, unused_rng(), nullptr, self);
}

data::LossStats Transformer::train_head_step(const data::TokenBatch& batch, Rng& dropout_rng, float lm_weight,
                                             bool train_body, const HeadBackward& head) {
  check_head_batch(batch);
  if (lm_weight > 0 && config_.arch != TransformerArch::lm)
    throw ConfigError("transformer: an auxiliary language-model loss needs an lm body, this one is '" +
                      std::string(arch_name(config_.arch)) + "'");
  if (!cache_) cache_ = std::make_unique<StepCache>();
  StepCache& c = *cache_;
  const Tensor h = body(batch, /*training=*/true, dropout_rng, &c);   // [B, L, D]
  Tensor dh = head(h);
  check_tensor(dh, h.shape(), "transformer: the head's gradient dh [B, L, D]");
  data::LossStats lm;
  if (lm_weight > 0) {
    const int64_t V = config_.tgt_vocab;
    ops::LinearCache out_cache;
    const Tensor h2 = h.reshape({kAny, config_.d_model});
    Tensor logits = output_ ? output_->forward(h2, &out_cache)
                            : ops::linear_forward(h2, tgt_embed_.table.value.rows(0, V), Tensor(), &out_cache);
    const ops::CrossEntropyOptions ce_options{data::kPad, config_.label_smoothing};
    lm = data::loss_stats(
        ops::cross_entropy_forward_backward_inplace(logits, batch.tgt.reshape({kAny}), ce_options, lm_weight));
    if (train_body) ops::accumulate(dh, output_backward(logits, out_cache).reshape(h.shape()));
  }
  if (!train_body) return lm;
  if (config_.arch == TransformerArch::lm)
    decoder_backward(std::move(dh), c);
  else
    encoder_backward(std::move(dh), c);
  return lm;
}

// ---- decoding ---------------------------------------------------------------------------------

Tensor Transformer::encode(const Tensor& src, const Tensor& src_len, const Tensor& segments) const {
  if (config_.arch == TransformerArch::lm) throw ConfigError("transformer: an lm has no encoder");
  check_tensor(src, {kAny, kAny}, "transformer: src [B, S]", DType::i32);
  check_tensor(src_len, {src.dim(0)}, "transformer: src_len [B]", DType::i32);
  if (config_.arch == TransformerArch::cmlm)
    return run_encoder(with_length_token(src), plus_one(src_len), {}, /*training=*/false, unused_rng(), nullptr);
  return run_encoder(src, src_len, segments, /*training=*/false, unused_rng(), nullptr);
}

DecoderState Transformer::start_decoding(const Tensor& memory, const Tensor& src_len, int64_t capacity,
                                         int64_t rows) const {
  if (config_.arch == TransformerArch::mlm) throw ConfigError("transformer: an mlm model has no decoder");
  if (config_.arch == TransformerArch::cmlm)
    throw ConfigError("transformer: a cmlm model has no incremental decoder (it decodes with mask-predict)");
  if (capacity < 1 || capacity > config_.max_len)
    throw ConfigError("transformer: decoding capacity must be in [1, max_len = " +
                      std::to_string(config_.max_len) + "], got " + std::to_string(capacity));
  DecoderState st;
  const bool encdec = config_.arch == TransformerArch::encdec;
  int64_t B = rows;
  if (encdec) {
    check_tensor(memory, {kAny, kAny, config_.d_model}, "transformer: memory [B, S, D]");
    B = memory.dim(0);
    check_tensor(src_len, {B}, "transformer: src_len [B]", DType::i32);
    st.memory = memory;
    st.src_len = src_len;
  }
  for (const nn::DecoderLayer& layer : decoder_) {
    st.self_kv.push_back(layer.self_attn.new_kv_cache(B, capacity));
    if (encdec) {
      nn::KVCache kv = layer.cross_attn->new_kv_cache(B, memory.dim(1));
      layer.cross_attn->append_kv(memory, memory, kv);   // projected once per source batch
      st.cross_kv.push_back(std::move(kv));
    }
  }
  return st;
}

Tensor Transformer::decode_step(const Tensor& tokens, DecoderState& st, std::vector<Tensor>* self,
                                std::vector<Tensor>* cross) const {
  check_tensor(tokens, {st.rows(), kAny}, "transformer: decode_step tokens [B, Tn]", DType::i32);
  const int64_t Tn = tokens.dim(1);
  Tensor x = embed(tgt_embed_, dec_pos_, tokens, {}, st.length, /*training=*/false, unused_rng(), nullptr);
  ops::AttentionMask smask = self_mask(Tensor(), /*causal=*/true);
  smask.query_offset = st.length;   // = cache length after the append - Tn
  const ops::AttentionMask cmask = ops::AttentionMask::padding(st.src_len);
  if (self) self->assign(decoder_.size(), Tensor());
  if (cross) cross->assign(decoder_.size(), Tensor());
  for (size_t l = 0; l < decoder_.size(); ++l) {
    const bool has_cross = decoder_[l].has_cross_attention();
    x = decoder_[l].step(x, st.self_kv[l], has_cross ? &st.cross_kv[l] : nullptr, smask, cmask,
                         self ? &(*self)[l] : nullptr, cross && has_cross ? &(*cross)[l] : nullptr);
  }
  st.length += Tn;
  if (dec_norm_) x = dec_norm_->forward(x, nullptr);
  return output_logits(x);
}

Tensor Transformer::decode_prefix(const Tensor& prefix, const Tensor& memory, const Tensor& src_len,
                                  std::vector<Tensor>* self, std::vector<Tensor>* cross) const {
  if (config_.arch == TransformerArch::mlm) throw ConfigError("transformer: an mlm model has no decoder");
  if (config_.arch == TransformerArch::cmlm)
    throw ConfigError("transformer: a cmlm model has no causal decoder (use nat_logits)");
  check_tensor(prefix, {kAny, kAny}, "transformer: prefix [B, T]", DType::i32);
  return run_decoder(prefix, Tensor(), memory, src_len, /*training=*/false, unused_rng(), nullptr, self, cross);
}

// ---- decoder state ----------------------------------------------------------------------------

namespace {

// nn::gather_rows for a KV cache, copying only the filled positions [0, length) of each head.
nn::KVCache gather_kv(const nn::KVCache& kv, const std::vector<int64_t>& keep) {
  const int64_t NH = kv.k.dim(1), cap = kv.k.dim(2), HD = kv.k.dim(3), R = static_cast<int64_t>(keep.size());
  nn::KVCache out{Tensor({R, NH, cap, HD}), Tensor({R, NH, cap, HD}), kv.length};
  const int64_t n = kv.length * HD;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t h = 0; h < NH; ++h) {
      const int64_t src = (keep[static_cast<size_t>(r)] * NH + h) * cap * HD, dst = (r * NH + h) * cap * HD;
      std::copy(kv.k.data() + src, kv.k.data() + src + n, out.k.data() + dst);
      std::copy(kv.v.data() + src, kv.v.data() + src + n, out.v.data() + dst);
    }
  return out;
}

}  // namespace

void DecoderState::select(const std::vector<int64_t>& keep) {
  const int64_t B = rows();
  for (int64_t r : keep)
    if (r < 0 || r >= B)
      throw ShapeError("decoder state: row " + std::to_string(r) + " out of range [0, " + std::to_string(B) + ")");
  for (nn::KVCache& kv : self_kv) kv = gather_kv(kv, keep);
  for (nn::KVCache& kv : cross_kv) kv = gather_kv(kv, keep);
  memory = nn::gather_rows(memory, keep);   // an empty one (lm) stays empty
  src_len = nn::gather_rows(src_len, keep);
}

}  // namespace attn::transformer

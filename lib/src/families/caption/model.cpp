// caption::Captioner: construction, the convolutional encoder, the teacher-forced forward and
// backward of a training step around the decoder's steps (nn::AttentionDecoder), and
// step-by-step decoding. The config is in captioner_config.cpp.
#include "attn/families/caption/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "attn/ops/activation.hpp"
#include "attn/ops/batch_norm.hpp"
#include "attn/ops/conv.hpp"
#include "attn/ops/conv_pool.hpp"
#include "attn/ops/cross_entropy.hpp"
#include "attn/ops/dropout.hpp"
#include "attn/ops/pool.hpp"
#include "attn/ops/rows.hpp"
#include "attn/ops/shape_ops.hpp"

namespace attn::caption {
namespace {

using ops::add_into;
using ops::copy_rows;

bool soft(const CaptionerConfig& c) { return c.attention == CaptionAttention::soft; }

// [B, L, K] -> [B, L, K + 2]: each of the h x w locations' annotation followed by its centre's
// x and y, scaled so that the grid's first and last centres are -1 and 1 (0 for a single one).
Tensor with_coordinates(const Tensor& a, int64_t h, int64_t w) {
  const int64_t B = a.dim(0), L = a.dim(1), K = a.dim(2);
  const auto scaled = [](int64_t i, int64_t n) {
    return n > 1 ? 2.0f * static_cast<float>(i) / static_cast<float>(n - 1) - 1.0f : 0.0f;
  };
  Tensor out({B, L, K + 2});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      float* row = out.data() + (b * L + i) * (K + 2);
      std::copy_n(a.data() + (b * L + i) * K, K, row);
      row[K] = scaled(i % w, w);
      row[K + 1] = scaled(i / w, h);
    }
  return out;
}

// [B, L, K + 2] -> [B, L, K]: the gradient of the encoder's part of the annotations.
Tensor without_coordinates(const Tensor& da, int64_t K) {
  const int64_t B = da.dim(0), L = da.dim(1);
  Tensor out({B, L, K});
  for (int64_t r = 0; r < B * L; ++r) std::copy_n(da.data() + r * (K + 2), K, out.data() + r * K);
  return out;
}

// torch.nn.BatchNorm2d's defaults.
constexpr float kBatchNormEps = 1e-5f, kBatchNormMomentum = 0.1f;

// The decoder: an LSTM over [e_t; z_t] attending in Bahdanau order. With attention `mean` the
// decoder has no attention (score none) and the caller's part of its input is [e_t; mean a].
nn::AttentionDecoderConfig decoder_config(const CaptionerConfig& c) {
  const int64_t D = c.grid().D;
  return {.cell = nn::RnnCell::lstm,
          .input_dim = soft(c) ? c.embed_dim : c.embed_dim + D,
          .hidden = c.hidden,
          .score = soft(c) ? nn::ScoreKind::concat : nn::ScoreKind::none,
          .memory_dim = D,
          .attention_dim = c.attention_dim,
          .max_len = 0,
          .style = nn::AttentionStyle::bahdanau,
          .local = nn::LocalAttention::global,
          .window = 0,
          .gate = soft(c) && c.gate};
}

// mean_i a[b, i, :]: [B, L, D] -> [B, D].
Tensor mean_annotation(const Tensor& a) {
  const int64_t B = a.dim(0), L = a.dim(1), D = a.dim(2);
  Tensor m({B, D});
  for (int64_t b = 0; b < B; ++b) {
    float* mb = m.data() + b * D;
    for (int64_t i = 0; i < L; ++i) add_into(mb, a.data() + (b * L + i) * D, D);
    for (int64_t d = 0; d < D; ++d) mb[d] /= static_cast<float>(L);
  }
  return m;
}

// Rows of the deep output's input [s_t; z_t] (width Dd + D) get z_t = the mean annotation when
// the decoder does not attend (it wrote s_t only).
void put_mean_context(const Tensor& mean, int64_t Dd, float* o, int64_t ldo) {
  copy_rows(mean.data(), mean.dim(1), o + Dd, ldo, mean.dim(0), mean.dim(1));
}

// 1 where the row's target attains the row's maximum logit (ties count, as the cross-entropy's
// `correct` does), 0 elsewhere and for rows not counted (target -1). logits [N, V], targets [N].
std::vector<uint8_t> rows_correct(const Tensor& logits, const Tensor& targets) {
  const int64_t N = logits.dim(0), V = logits.dim(1);
  std::vector<uint8_t> ok(static_cast<size_t>(N), 0);
  for (int64_t r = 0; r < N; ++r) {
    const int32_t t = targets.idata()[r];
    if (t < 0) continue;
    const float* row = logits.data() + r * V;
    bool best = true;
    for (int64_t v = 0; v < V && best; ++v) best = row[v] <= row[t];
    ok[static_cast<size_t>(r)] = best;
  }
  return ok;
}

// H(alpha) = -sum_i alpha_i log alpha_i of one row of L weights (alpha log alpha -> 0 at 0).
double entropy(const float* alpha, int64_t L) {
  double h = 0;
  for (int64_t i = 0; i < L; ++i)
    if (alpha[i] > 0) h -= static_cast<double>(alpha[i]) * std::log(static_cast<double>(alpha[i]));
  return h;
}

// dst += scale * dH/dalpha = -scale (log alpha_i + 1). A weight that underflowed to 0 takes the
// log of the smallest normal float instead: the softmax's backward multiplies its entry by 0.
void add_entropy_grad(const float* alpha, int64_t L, float scale, float* dst) {
  for (int64_t i = 0; i < L; ++i)
    dst[i] -= scale * (std::log(std::max(alpha[i], std::numeric_limits<float>::min())) + 1.0f);
}

}  // namespace

// Everything a forward pass makes that its backward needs.
struct Captioner::Run {
  int64_t B = 0, T = 0, L = 0, D = 0;
  struct Layer {
    ops::ConvCache conv;
    ops::ConvPoolCache conv_pool;     // a convolution run with the 2 x 2 pooling after it
    ops::BatchNormCache bn;
    ops::BatchStatistics stats;       // the batch's, for the running statistics
    ops::ReluCache relu;
    ops::MaxPoolCache pool;
  };
  std::vector<Layer> layers;          // per encoder layer
  ops::PermuteCache to_rows;          // [B, D, h, w] -> [B, h, w, D]
  Tensor annotations, mean;           // [B, L, D], [B, D]
  ops::LinearCache init_h, init_c;
  ops::TanhCache init_h_tanh, init_c_tanh;
  nn::AttentionMemory memory;         // soft attention's, over the annotations
  Tensor ids_in, targets;             // int32 [T, B] inputs (BOS, y_0, ...), [T*B] targets (-1: none)
  ops::EmbeddingCache embed;
  Tensor emb;                         // [T*B, m]
  Tensor X;                           // [T*B, Ex]: the caller's part of the cell input
  Tensor O;                           // [T*B, Dd + D]: [s_t; z_t]
  nn::AttentionDecoderCache dec;
  Tensor coverage;                    // [B, L]: sum_t alpha_bti over each caption's steps
  double entropy = 0;                 // sum over counted words of H(alpha_bt) (while entropy_weight() > 0)
  ops::LinearCache deep;
  ops::TanhCache deep_tanh;
  ops::DropoutCache drop;
  ops::LinearCache out;
  Tensor logits;                      // [T*B, V] time-major
};

// ---- construction ----------------------------------------------------------------------------

Captioner::Captioner(const CaptionerConfig& config, Rng& rng) : config_(config) {
  config.validate();
  const CaptionerConfig& c = config_;
  layers_ = parse_encoder(c.encoder);
  int64_t in = c.channels;
  for (const ConvEncoderLayer& layer : layers_) {
    if (layer.kind != ConvEncoderLayer::conv) continue;
    // He et al. 2015 uniform (ReLU follows): U(+-sqrt(6 / fan_in)); biases 0.
    const int64_t fan_in = in * layer.size * layer.size;
    const float bound = std::sqrt(6.0f / static_cast<float>(fan_in));
    const std::string k = std::to_string(convs_.size()), name = "encoder/conv" + k, bn = "encoder/bn" + k;
    Conv conv;
    conv.W = Param(name + "/W", rand_uniform({layer.channels, in, layer.size, layer.size}, rng, -bound, bound));
    if (c.batch_norm) {
      conv.gamma = Param(bn + "/gamma", Tensor::full({layer.channels}, 1.0f));
      conv.beta = Param(bn + "/beta", Tensor({layer.channels}));
      conv.running_mean = Tensor({layer.channels});
      conv.running_var = Tensor::full({layer.channels}, 1.0f);
    } else {
      conv.b = Param(name + "/b", Tensor({layer.channels}));
    }
    convs_.push_back(std::move(conv));
    in = layer.channels;
  }
  const int64_t D = c.grid().D;
  init_h_ = nn::Linear(D, c.hidden, "init_h", rng);
  init_c_ = nn::Linear(D, c.hidden, "init_c", rng);
  embed_ = nn::Embedding(c.vocab, c.embed_dim, "embedding", rng, 0.1f, data::kPad);
  decoder_ = nn::AttentionDecoder(decoder_config(c), "decoder", rng);
  deep_ = nn::Linear(c.hidden + D, c.embed_dim, "deep", rng);
  output_ = nn::Linear(c.embed_dim, c.vocab, "output", rng);
}

Captioner::~Captioner() = default;
Captioner::Captioner(Captioner&&) noexcept = default;
Captioner& Captioner::operator=(Captioner&&) noexcept = default;

ParamList Captioner::params() {
  ParamList list;
  for (Conv& conv : convs_) {
    list.push_back(&conv.W);
    if (config_.batch_norm) {
      list.push_back(&conv.gamma);
      list.push_back(&conv.beta);
    } else {
      list.push_back(&conv.b);
    }
  }
  nn::append(list, init_h_.params());
  nn::append(list, init_c_.params());
  nn::append(list, embed_.params());
  nn::append(list, decoder_.params());
  nn::append(list, deep_.params());
  nn::append(list, output_.params());
  return list;
}

std::vector<std::pair<std::string, Tensor*>> Captioner::buffers() {
  std::vector<std::pair<std::string, Tensor*>> list;
  if (!config_.batch_norm) return list;
  for (size_t k = 0; k < convs_.size(); ++k) {
    const std::string bn = "encoder/bn" + std::to_string(k);
    list.emplace_back(bn + "/running_mean", &convs_[k].running_mean);
    list.emplace_back(bn + "/running_var", &convs_[k].running_var);
  }
  return list;
}

// ---- encoder ---------------------------------------------------------------------------------

void Captioner::check_images(const Tensor& images, const std::string& label) const {
  const CaptionerConfig& c = config_;
  check_tensor(images, {kAny, c.channels, c.height, c.width}, label + ": images [B, C, H, W]");
  for (const float v : images.values())
    if (!std::isfinite(v)) throw DataError(label + ": images hold a non-finite value (" + std::to_string(v) + ")");
}

// A convolution's ReLU runs after the max pooling that follows it, if one does: max pooling
// commutes with ReLU (both monotone), the first maximum of a window is the same element either
// way wherever the gradient is not 0, so values and gradients are the same bits, and the ReLU
// and its backward touch a quarter of the elements (pool2).
bool Captioner::relu_after_pool(size_t k) const {
  return k + 1 < layers_.size() && layers_[k + 1].kind == ConvEncoderLayer::pool;
}

bool Captioner::pools_with_next(size_t k) const {
  return layers_[k].kind == ConvEncoderLayer::conv && !config_.batch_norm && relu_after_pool(k) &&
         layers_[k + 1].size == 2;
}

Tensor Captioner::encode(const Tensor& images, bool training, Run* run) const {
  Tensor x = images;
  if (run != nullptr) run->layers.assign(layers_.size(), {});
  size_t conv = 0;
  for (size_t k = 0; k < layers_.size(); ++k) {
    const ConvEncoderLayer& layer = layers_[k];
    Run::Layer* lc = run ? &run->layers[k] : nullptr;
    if (layer.kind == ConvEncoderLayer::conv) {
      const Conv& p = convs_[conv++];
      const ops::ConvOptions o{.padding = layer.size / 2};
      if (pools_with_next(k))
        x = ops::conv2d_max_pool2_forward(x, p.W.value, p.b.value, o, lc ? &lc->conv_pool : nullptr);
      else
        x = ops::conv2d_forward(x, p.W.value, p.b.value, o, lc ? &lc->conv : nullptr);
      if (config_.batch_norm)
        x = ops::batch_norm2d_forward(x, p.gamma.value, p.beta.value, p.running_mean, p.running_var, training,
                                      kBatchNormEps, lc ? &lc->bn : nullptr, lc ? &lc->stats : nullptr);
      if (!relu_after_pool(k)) x = ops::relu_forward(x, lc ? &lc->relu : nullptr);
    } else {
      const bool done = k > 0 && pools_with_next(k - 1);   // by the convolution before
      if (!done) x = ops::max_pool2d_forward(x, {.kernel = layer.size}, lc ? &lc->pool : nullptr);
      if (k > 0 && relu_after_pool(k - 1)) x = ops::relu_forward(x, lc ? &lc->relu : nullptr);
    }
  }
  const int64_t B = x.dim(0), K = x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor a = ops::permute_forward(x, {0, 2, 3, 1}, run ? &run->to_rows : nullptr).reshape({B, h * w, K});
  return config_.coords ? with_coordinates(a, h, w) : a;
}

void Captioner::encode_backward(Tensor dannotations, Run& run) {
  const CaptionerConfig::Grid g = config_.grid();
  const int64_t K = config_.coords ? g.D - 2 : g.D;   // the coordinates are constants
  if (config_.coords) dannotations = without_coordinates(dannotations, K);
  Tensor dx = ops::permute_backward(dannotations.reshape({run.B, g.h, g.w, K}), run.to_rows);
  size_t conv = convs_.size();
  for (size_t k = layers_.size(); k-- > 0;) {
    Run::Layer& lc = run.layers[k];
    if (layers_[k].kind == ConvEncoderLayer::conv) {
      Conv& p = convs_[--conv];
      if (!relu_after_pool(k)) dx = ops::relu_backward(dx, lc.relu);
      if (config_.batch_norm) dx = ops::batch_norm2d_backward(dx, p.gamma.value, lc.bn, p.gamma.grad, p.beta.grad);
      const bool input_grad = k > 0;
      if (pools_with_next(k))
        dx = ops::conv2d_max_pool2_backward(dx, p.W.value, lc.conv_pool, p.W.grad, p.b.grad, input_grad);
      else
        dx = ops::conv2d_backward(dx, p.W.value, lc.conv, p.W.grad, p.b.grad, input_grad);
    } else {
      if (k > 0 && relu_after_pool(k - 1)) dx = ops::relu_backward(dx, lc.relu);
      const bool done = k > 0 && pools_with_next(k - 1);   // by the convolution before
      if (!done) dx = ops::max_pool2d_backward(dx, lc.pool);
    }
  }
}

// ---- teacher-forced forward and backward -----------------------------------------------------

void Captioner::forward(const CaptionBatch& batch, bool training, bool keep, Rng& rng, Run& run,
                        float* attention) const {
  const CaptionerConfig& c = config_;
  check_images(batch.images, "captioner");
  const int64_t B = batch.images.dim(0);
  check_tensor(batch.tgt, {B, kAny}, "captioner: tgt [B, T]", DType::i32);
  check_tensor(batch.tgt_len, {B}, "captioner: tgt_len [B]", DType::i32);
  const int64_t T = batch.tgt.dim(1), m = c.embed_dim, Dd = c.hidden;
  if (T < 1) throw ShapeError("captioner: tgt [B, T] has T = 0");
  const int32_t* tgt = batch.tgt.idata();
  const int32_t* len = batch.tgt_len.idata();
  for (int64_t b = 0; b < B; ++b)
    if (len[b] < 1 || len[b] > T)
      throw DataError("captioner: tgt_len[" + std::to_string(b) + "] = " + std::to_string(len[b]) +
                      " is outside [1, T = " + std::to_string(T) + "]");

  run.B = B;
  run.T = T;
  run.annotations = encode(batch.images, training, keep ? &run : nullptr);
  const int64_t L = run.annotations.dim(1), D = run.annotations.dim(2), Do = Dd + D;
  run.L = L;
  run.D = D;
  run.mean = mean_annotation(run.annotations);
  const Tensor h0 = ops::tanh_forward(init_h_.forward(run.mean, keep ? &run.init_h : nullptr),
                                      keep ? &run.init_h_tanh : nullptr);
  const Tensor c0 = ops::tanh_forward(init_c_.forward(run.mean, keep ? &run.init_c : nullptr),
                                      keep ? &run.init_c_tanh : nullptr);
  if (soft(c)) run.memory = decoder_.prepare(run.annotations, Tensor());

  // Decoder inputs [BOS, y_0, ..., y_{T-2}] and targets y_t (t < tgt_len), time-major.
  run.ids_in = Tensor({T, B}, DType::i32);
  run.targets = Tensor({T * B}, DType::i32);
  int32_t* in = run.ids_in.idata();
  int32_t* tg = run.targets.idata();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      in[t * B + b] = t == 0 ? data::kBos : tgt[b * T + t - 1];
      tg[t * B + b] = t < len[b] ? tgt[b * T + t] : -1;
    }
  run.emb = embed_.forward(run.ids_in, keep ? &run.embed : nullptr).reshape({T * B, m});
  if (soft(c)) {
    run.X = run.emb;
  } else {   // [e_t; mean a]
    run.X = Tensor({T * B, m + D});
    copy_rows(run.emb.data(), m, run.X.data(), m + D, T * B, m);
    for (int64_t t = 0; t < T; ++t) copy_rows(run.mean.data(), D, run.X.data() + t * B * (m + D) + m, m + D, B, D);
  }
  const int64_t G = decoder_.gates(), Ex = run.X.dim(1);
  Tensor gx({T * B, G});
  decoder_.project_input(run.X.data(), Ex, T * B, gx.data());

  run.O = Tensor({T * B, Do});
  if (keep) run.dec = decoder_.make_cache(T, B);
  if (soft(c)) run.coverage = Tensor({B, L});
  nn::AttentionDecoderState st = decoder_.initial_state(h0, c0);
  const bool track_entropy = entropy_weight() > 0;
  for (int64_t t = 0; t < T; ++t) {
    float* o_t = run.O.data() + t * B * Do;
    const Tensor w = decoder_.step(t, gx.data() + t * B * G, st, run.memory, o_t, Do, keep ? &run.dec : nullptr);
    if (!soft(c)) put_mean_context(run.mean, Dd, o_t, Do);
    for (int64_t b = 0; b < B; ++b) {
      if (t >= len[b]) continue;
      if (soft(c)) {
        add_into(run.coverage.data() + b * L, w.data() + b * L, L);
        if (track_entropy) run.entropy += entropy(w.data() + b * L, L);
      }
      float* a = attention ? attention + (b * T + t) * L : nullptr;
      if (a == nullptr) continue;
      if (soft(c)) std::memcpy(a, w.data() + b * L, static_cast<size_t>(L) * sizeof(float));
      else std::fill(a, a + L, 1.0f / static_cast<float>(L));
    }
  }
  // The deep output over all T*B rows: tanh(L_h s_t + L_z z_t + b + e_t), dropout, L_o.
  Tensor pre = deep_.forward(run.O, keep ? &run.deep : nullptr);
  add_into(pre.data(), run.emb.data(), pre.numel());
  const Tensor hidden = ops::dropout_forward(ops::tanh_forward(pre, keep ? &run.deep_tanh : nullptr), c.dropout,
                                             training, rng, keep ? &run.drop : nullptr);
  run.logits = output_.forward(hidden, keep ? &run.out : nullptr);
}

namespace {

// sum_b sum_i (1 - coverage_bi)^2 (0 for an undefined coverage).
double coverage_penalty(const Tensor& coverage) {
  double p = 0;
  if (!coverage.defined()) return p;
  for (const float v : coverage.values()) p += (1.0 - v) * (1.0 - v);
  return p;
}

// The sums of a batch: the words' cross-entropy, the penalties, and the captions all of whose
// words are right.
CaptionStats batch_stats(const ops::CrossEntropyResult& ce, const std::vector<uint8_t>& correct,
                         const Tensor& coverage, double entropy, float lambda, float gamma, const Tensor& tgt_len) {
  const int64_t B = tgt_len.dim(0);
  CaptionStats s;
  s.nll_sum = ce.nll_sum;
  s.penalty_sum = coverage_penalty(coverage);
  s.entropy_sum = entropy;
  s.loss_sum = ce.sum + static_cast<double>(lambda) * s.penalty_sum + static_cast<double>(gamma) * s.entropy_sum;
  s.tokens = ce.count;
  s.correct = ce.correct;
  s.sequences = B;
  for (int64_t b = 0; b < B; ++b) {
    bool all = true;
    for (int64_t t = 0; t < tgt_len.idata()[b]; ++t) all = all && correct[static_cast<size_t>(t * B + b)];
    s.sequences_correct += all;
  }
  return s;
}

}  // namespace

CaptionStats Captioner::train_step(const CaptionBatch& batch, Rng& rng) {
  const CaptionerConfig& c = config_;
  Run run;
  forward(batch, /*training=*/true, /*keep=*/true, rng, run, nullptr);
  const std::vector<uint8_t> correct = rows_correct(run.logits, run.targets);
  // The words' loss and its gradient in one op (over the counted words); dlogits overwrite the logits.
  const ops::CrossEntropyResult ce = ops::cross_entropy_forward_backward_inplace(run.logits, run.targets, {}, 1.0f);
  const float gamma = entropy_weight();
  const CaptionStats stats = batch_stats(ce, correct, run.coverage, run.entropy, c.alpha_c, gamma, batch.tgt_len);
  if (ce.count == 0) return stats;

  const int64_t B = run.B, T = run.T, L = run.L, D = run.D, m = c.embed_dim, Dd = c.hidden, Do = Dd + D;
  const float n_tok = static_cast<float>(ce.count);
  // Deep output, one GEMM each way for all T*B rows.
  const Tensor dpre = ops::tanh_backward(ops::dropout_backward(output_.backward(run.logits, run.out), run.drop),
                                         run.deep_tanh);
  run.logits = Tensor();
  const Tensor dO = deep_.backward(dpre, run.deep);   // [T*B, Dd + D]
  Tensor dEmb = dpre.clone();                          // pre = ... + e_t

  // The penalties' gradient on every counted step's weights: -2 lambda (1 - coverage) / N_tok
  // and -gamma (log alpha_t + 1) / N_tok; steps past a caption's end have none.
  Tensor dcover;
  if (soft(c) && c.alpha_c > 0) {
    dcover = Tensor::uninitialized({B, L});
    const float* cover = run.coverage.data();
    float* dc = dcover.data();
    for (int64_t i = 0; i < B * L; ++i) dc[i] = -2.0f * c.alpha_c * (1.0f - cover[i]) / n_tok;
  }
  const bool sharpen = gamma > 0;
  const int32_t* len = batch.tgt_len.idata();
  nn::AttentionDecoderGrad grad = decoder_.begin_backward(run.memory, T, B);
  for (int64_t t = T - 1; t >= 0; --t) {
    // dcover itself when every caption counts step t and there is no entropy term: no copy.
    Tensor dweights = dcover;
    const bool ragged = std::any_of(len, len + B, [&](int32_t l) { return t >= l; });
    if (sharpen || (dcover.defined() && ragged)) {
      dweights = dcover.defined() ? dcover.clone() : Tensor({B, L});
      for (int64_t b = 0; b < B; ++b) {
        float* row = dweights.data() + b * L;
        if (t >= len[b]) std::fill_n(row, L, 0.0f);
        else if (sharpen) add_entropy_grad(run.dec.steps[t].weights.data() + b * L, L, gamma / n_tok, row);
      }
    }
    decoder_.step_backward(t, dO.data() + t * B * Do, Do, run.O.data() + t * B * Do, Do, run.dec, run.memory, grad,
                           dweights);
  }
  decoder_.end_backward(run.O.data(), Do, run.dec, run.memory, grad);
  const int64_t Ex = run.X.dim(1);
  Tensor dX({T * B, Ex});
  decoder_.input_backward(grad, run.X.data(), Ex, dX.data(), Ex);

  // d mean a: from the initial state and, without attention, from every step's context.
  Tensor dmean = init_h_.backward(ops::tanh_backward(grad.dstate.h, run.init_h_tanh), run.init_h);
  add_into(dmean.data(), init_c_.backward(ops::tanh_backward(grad.dstate.c, run.init_c_tanh), run.init_c).data(),
           B * D);
  for (int64_t r = 0; r < T * B; ++r) {
    add_into(dEmb.data() + r * m, dX.data() + r * Ex, m);
    if (soft(c)) continue;
    float* dmb = dmean.data() + (r % B) * D;
    add_into(dmb, dO.data() + r * Do + Dd, D);
    add_into(dmb, dX.data() + r * Ex + m, D);
  }
  embed_.backward(dEmb.reshape({T, B, m}), run.embed);

  Tensor dA = soft(c) ? grad.memory.dkeys : Tensor({B, L, D});
  // Every location's share of the mean's gradient, d mean / L, divided once per row.
  float* dm = dmean.data();
  for (int64_t e = 0; e < B * D; ++e) dm[e] /= static_cast<float>(L);
  float* da = dA.data();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < D; ++d) da[(b * L + i) * D + d] += dm[b * D + d];
  encode_backward(dA, run);
  if (c.batch_norm)
    for (size_t k = 0, conv = 0; k < layers_.size(); ++k)
      if (layers_[k].kind == ConvEncoderLayer::conv) {
        Conv& p = convs_[conv++];
        ops::update_running_stats(run.layers[k].stats, kBatchNormMomentum, p.running_mean, p.running_var);
      }
  return stats;
}

CaptionStats Captioner::training_loss(const CaptionBatch& batch, Rng& rng) const {
  Run run;
  forward(batch, /*training=*/true, /*keep=*/false, rng, run, nullptr);
  const std::vector<uint8_t> correct = rows_correct(run.logits, run.targets);
  const ops::CrossEntropyResult ce = ops::cross_entropy_forward(run.logits, run.targets, {}, nullptr);
  return batch_stats(ce, correct, run.coverage, run.entropy, config_.alpha_c, entropy_weight(), batch.tgt_len);
}

CaptionStats Captioner::evaluate(const CaptionBatch& batch, Tensor* attention) const {
  Run run;
  Rng unused(0);
  Tensor weights;
  if (attention != nullptr) {
    check_tensor(batch.tgt, {kAny, kAny}, "captioner: tgt [B, T]", DType::i32);
    weights = Tensor({batch.tgt.dim(0), batch.tgt.dim(1), config_.grid().locations()});
  }
  forward(batch, /*training=*/false, /*keep=*/false, unused, run, attention ? weights.data() : nullptr);
  if (attention != nullptr) *attention = weights;
  const std::vector<uint8_t> correct = rows_correct(run.logits, run.targets);
  const ops::CrossEntropyResult ce = ops::cross_entropy_forward(run.logits, run.targets, {}, nullptr);
  return batch_stats(ce, correct, run.coverage, run.entropy, config_.alpha_c, entropy_weight(), batch.tgt_len);
}

// ---- step-by-step decoding -------------------------------------------------------------------

struct CaptionerDecoderState::Impl {
  nn::AttentionMemory memory;        // soft attention's over the rows' annotations
  Tensor mean;                       // [B, D]
  nn::AttentionDecoderState st;
  int64_t t = 0;                     // steps taken
};

CaptionerDecoderState::CaptionerDecoderState() : impl_(std::make_unique<Impl>()) {}
CaptionerDecoderState::~CaptionerDecoderState() = default;
CaptionerDecoderState::CaptionerDecoderState(CaptionerDecoderState&&) noexcept = default;
CaptionerDecoderState& CaptionerDecoderState::operator=(CaptionerDecoderState&&) noexcept = default;

int64_t CaptionerDecoderState::rows() const { return impl_->st.rows(); }

void CaptionerDecoderState::select(const std::vector<int64_t>& keep) {
  impl_->st.select(keep);
  impl_->memory = nn::gather_rows(impl_->memory, keep);
  impl_->mean = nn::gather_rows(impl_->mean, keep);
}

CaptionerDecoderState Captioner::start_decoding(const Tensor& images, int64_t copies) const {
  check_images(images, "captioner decoding");
  if (copies < 1) throw ConfigError("captioner decoding: copies must be >= 1, got " + std::to_string(copies));
  Tensor a = encode(images, /*training=*/false, nullptr);
  if (copies > 1) {
    std::vector<int64_t> rows;
    for (int64_t n = 0; n < images.dim(0); ++n)
      for (int64_t k = 0; k < copies; ++k) rows.push_back(n);
    a = nn::gather_rows(a, rows);
  }
  CaptionerDecoderState state;
  CaptionerDecoderState::Impl& s = *state.impl_;
  s.mean = mean_annotation(a);
  const Tensor h0 = ops::tanh_forward(init_h_.forward(s.mean, nullptr), nullptr);
  const Tensor c0 = ops::tanh_forward(init_c_.forward(s.mean, nullptr), nullptr);
  if (soft(config_)) s.memory = decoder_.prepare(a, Tensor());
  s.st = decoder_.initial_state(h0, c0);
  return state;
}

Tensor Captioner::decode_step(const Tensor& ids, CaptionerDecoderState& state, Tensor* weights) const {
  const CaptionerConfig& c = config_;
  CaptionerDecoderState::Impl& s = *state.impl_;
  const int64_t B = s.st.rows(), m = c.embed_dim, Dd = c.hidden, D = s.mean.dim(1), L = c.grid().locations();
  check_tensor(ids, {B}, "captioner decoding: ids [B]", DType::i32);
  const Tensor e = embed_.forward(ids, nullptr);   // [B, m]
  Tensor x = e;
  if (!soft(c)) {
    x = Tensor({B, m + D});
    copy_rows(e.data(), m, x.data(), m + D, B, m);
    copy_rows(s.mean.data(), D, x.data() + m, m + D, B, D);
  }
  Tensor gx({B, decoder_.gates()});
  decoder_.project_input(x.data(), x.dim(1), B, gx.data());
  Tensor o({B, Dd + D});
  const Tensor w = decoder_.step(s.t++, gx.data(), s.st, s.memory, o.data(), Dd + D, nullptr);
  if (!soft(c)) put_mean_context(s.mean, Dd, o.data(), Dd + D);
  Tensor pre = deep_.forward(o, nullptr);
  add_into(pre.data(), e.data(), pre.numel());
  if (weights != nullptr) *weights = soft(c) ? w : Tensor::full({B, L}, 1.0f / static_cast<float>(L));
  return output_.forward(ops::tanh_forward(pre, nullptr), nullptr);
}

}  // namespace attn::caption

// The Transformer classifier: its inputs ([CLS]/[SEP] wrapping), configuration, and the head's
// forward and backward on the body (transformer_classifier.hpp).
#include "attn/families/transformer/classifier.hpp"

#include <algorithm>
#include <cmath>

#include "attn/data/token_data.hpp"
#include "attn/io/config_fields.hpp"
#include "attn/io/config_limits.hpp"
#include "attn/nn/grad_ready.hpp"
#include "attn/ops/cross_entropy.hpp"
#include "attn/ops/linear.hpp"

namespace attn::transformer {
namespace {

void check_rows(const Tensor& src, const Tensor& src_len, const Tensor& segments) {
  check_tensor(src, {kAny, kAny}, "classifier: src [B, L]", DType::i32);
  check_tensor(src_len, {src.dim(0)}, "classifier: src_len [B]", DType::i32);
  if (!segments.empty()) check_tensor(segments, src.shape(), "classifier: segments [B, L]", DType::i32);
  for (int64_t b = 0; b < src.dim(0); ++b)
    if (src_len.idata()[b] < 1 || src_len.idata()[b] > src.dim(1))
      throw ShapeError("classifier: src_len row " + std::to_string(b) + " is " + std::to_string(src_len.idata()[b]) +
                       ", expected [1, " + std::to_string(src.dim(1)) + "]");
}

// Row b's tokens with [SEP] between A and B: A [SEP] B, or A alone.
std::vector<int32_t> joined(const Tensor& src, const Tensor& segments, int64_t b, int64_t len,
                            std::vector<int32_t>* seg_out) {
  const int64_t L = src.dim(1);
  std::vector<int32_t> out;
  if (seg_out) seg_out->clear();
  for (int64_t t = 0; t < len; ++t) {
    const int32_t seg = segments.empty() ? 0 : segments.idata()[b * L + t];
    if (seg == 1 && (t == 0 || segments.idata()[b * L + t - 1] == 0)) {   // A's [SEP]
      out.push_back(kSep);
      if (seg_out) seg_out->push_back(0);
    }
    out.push_back(src.idata()[b * L + t]);
    if (seg_out) seg_out->push_back(seg);
  }
  return out;
}

}  // namespace

int64_t classifier_input_length(TransformerArch arch, int64_t len, bool pair) {
  // mlm: [CLS] ... [SEP] (+ B's [SEP]); lm: BOS ... (+ [SEP] between A and B), EOS as a target only.
  return arch == TransformerArch::mlm ? len + 2 + (pair ? 1 : 0) : len + 1 + (pair ? 1 : 0);
}

std::vector<int32_t> classifier_input_lengths(TransformerArch arch, const Tensor& src_len, const data::Rows& segments) {
  const std::vector<bool> pair = data::has_sentence_b(segments, src_len);
  std::vector<int32_t> out;
  for (int64_t i = 0; i < src_len.numel(); ++i)
    out.push_back(
        static_cast<int32_t>(classifier_input_length(arch, src_len.idata()[i], pair[static_cast<size_t>(i)])));
  return out;
}

data::TokenBatch bert_input(const Tensor& src, const Tensor& src_len, const Tensor& segments) {
  check_rows(src, src_len, segments);
  const int64_t B = src.dim(0);
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(B)), segs(static_cast<size_t>(B));
  int64_t width = 1;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = src_len.idata()[b];
    std::vector<int32_t> seg;
    std::vector<int32_t> row = joined(src, segments, b, len, &seg);
    row.insert(row.begin(), kCls);
    seg.insert(seg.begin(), 0);
    row.push_back(kSep);
    seg.push_back(seg.back());
    width = std::max<int64_t>(width, static_cast<int64_t>(row.size()));
    rows[static_cast<size_t>(b)] = std::move(row);
    segs[static_cast<size_t>(b)] = std::move(seg);
  }
  data::TokenBatch out;
  out.src = Tensor({B, width}, DType::i32);
  out.segments = Tensor({B, width}, DType::i32);
  out.src_len = Tensor({B}, DType::i32);
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = rows[static_cast<size_t>(b)];
    std::copy(r.begin(), r.end(), out.src.idata() + b * width);
    std::copy(segs[static_cast<size_t>(b)].begin(), segs[static_cast<size_t>(b)].end(), out.segments.idata() + b * width);
    out.src_len.idata()[b] = static_cast<int32_t>(r.size());
  }
  return out;
}

ClassifierBatch classifier_batch(TransformerArch arch, const Tensor& src, const Tensor& src_len,
                                 const Tensor& segments, const Tensor& labels) {
  check_rows(src, src_len, segments);
  const int64_t B = src.dim(0);
  if (!labels.empty()) check_tensor(labels, {B}, "classifier: labels [B]", DType::i32);
  ClassifierBatch out;
  out.labels = labels;
  out.read_at = Tensor({B}, DType::i32);
  if (arch == TransformerArch::mlm) {
    out.tokens = bert_input(src, src_len, segments);   // read_at 0: [CLS]
    return out;
  }
  if (arch != TransformerArch::lm)
    throw ConfigError("classifier: the body must be an lm or an mlm, not '" + std::string(arch_name(arch)) + "'");
  // lm: tgt = A ([SEP] B) EOS; the decoder reads BOS A ([SEP] B), and position tgt_len - 1 holds
  // the input's last token.
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(B));
  int64_t width = 1;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> row = joined(src, segments, b, src_len.idata()[b], nullptr);
    row.push_back(data::kEos);
    width = std::max<int64_t>(width, static_cast<int64_t>(row.size()));
    rows[static_cast<size_t>(b)] = std::move(row);
  }
  out.tokens.tgt = Tensor({B, width}, DType::i32);
  out.tokens.tgt_len = Tensor({B}, DType::i32);
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = rows[static_cast<size_t>(b)];
    std::copy(r.begin(), r.end(), out.tokens.tgt.idata() + b * width);
    out.tokens.tgt_len.idata()[b] = static_cast<int32_t>(r.size());
    out.read_at.idata()[b] = static_cast<int32_t>(r.size() - 1);
  }
  return out;
}

// ---- configuration ----------------------------------------------------------------------------

void ClassifierConfig::validate() const {
  body.validate();
  if (body.encoder_decoder())
    throw ConfigError("classifier config: arch must be lm or mlm (a pre-trained body), got " +
                      std::string(arch_name(body.arch)));
  io::check_range("classifier", "classes", classes, 2, io::kMaxVocab);
  if (!(aux_lm >= 0.0f && std::isfinite(aux_lm)))
    throw ConfigError("classifier config: aux_lm must be >= 0, got " + std::to_string(aux_lm));
  if (aux_lm > 0.0f && body.arch != TransformerArch::lm)
    throw ConfigError("classifier config: aux_lm (the auxiliary language-model loss) needs arch lm, got " +
                      std::string(arch_name(body.arch)));
}

std::map<std::string, io::AttrValue> ClassifierConfig::to_attrs() const { return io::write_fields(*this); }

ClassifierConfig ClassifierConfig::from_attrs(const std::map<std::string, io::AttrValue>& a, const std::string& source) {
  return io::read_fields<ClassifierConfig>(a, source);
}

double ClassifierStats::objective(float aux_lm) const {
  const double cls = count > 0 ? loss_sum / static_cast<double>(count) : NAN;
  if (aux_lm <= 0.0f || lm.tokens == 0) return cls;
  return cls + aux_lm * lm.loss_sum / static_cast<double>(lm.tokens);
}

// ---- the model --------------------------------------------------------------------------------

TransformerClassifier::TransformerClassifier(const ClassifierConfig& config, Rng& rng)
    : config_(config), body_((config.validate(), config.body), rng),
      head_(config.body.d_model, config.classes, "classifier", rng) {}

TransformerClassifier::TransformerClassifier(Transformer body, int64_t classes, float aux_lm, Rng& head_rng)
    : config_{body.config(), classes, aux_lm}, body_(std::move(body)),
      head_((config_.validate(), config_.body.d_model), classes, "classifier", head_rng) {}

ParamList TransformerClassifier::params() {
  ParamList list = body_.params();
  nn::append(list, head_.params());
  return list;
}

ParamList TransformerClassifier::head_params() { return head_.params(); }

Tensor TransformerClassifier::pooled(const Tensor& h, const Tensor& read_at) const {
  const int64_t B = h.dim(0), L = h.dim(1), D = h.dim(2);
  check_tensor(read_at, {B}, "classifier: read_at [B]", DType::i32);
  Tensor out({B, D});
  for (int64_t b = 0; b < B; ++b) {
    const int32_t t = read_at.idata()[b];
    if (t < 0 || t >= L)
      throw ShapeError("classifier: read_at row " + std::to_string(b) + " is " + std::to_string(t) +
                       ", outside the " + std::to_string(L) + " positions");
    std::copy_n(h.data() + (b * L + t) * D, D, out.data() + b * D);
  }
  return out;
}

ClassifierStats TransformerClassifier::train_step(const ClassifierBatch& batch, Rng& dropout_rng, bool train_body) {
  check_tensor(batch.labels, {batch.read_at.numel()}, "classifier: labels [B]", DType::i32);
  ClassifierStats stats;
  auto head = [&](const Tensor& h) {
    const int64_t B = h.dim(0), L = h.dim(1), D = h.dim(2);
    ops::LinearCache cache;
    Tensor logits = head_.forward(pooled(h, batch.read_at), &cache);   // [B, K]
    const ops::CrossEntropyResult ce =
        ops::cross_entropy_forward_backward_inplace(logits, batch.labels, {.ignore_index = -1, .label_smoothing = 0.0f}, 1.0f);
    stats.loss_sum = ce.sum;
    stats.count = ce.count;
    stats.correct = ce.correct;
    nn::announce_loss_count(static_cast<double>(ce.count));
    const Tensor dpooled = head_.backward(logits, cache);   // [B, D]
    nn::announce_final(head_.params());
    Tensor dh({B, L, D});
    for (int64_t b = 0; b < B; ++b)
      std::copy_n(dpooled.data() + b * D, D, dh.data() + (b * L + batch.read_at.idata()[b]) * D);
    return dh;
  };
  stats.lm = body_.train_head_step(batch.tokens, dropout_rng, config_.aux_lm, train_body, head);
  return stats;
}

ClassifierStats TransformerClassifier::evaluate(const ClassifierBatch& batch) const {
  check_tensor(batch.labels, {batch.read_at.numel()}, "classifier: labels [B]", DType::i32);
  const Tensor y = logits(batch);
  const ops::CrossEntropyResult ce = ops::cross_entropy_forward(y, batch.labels, {}, nullptr);
  ClassifierStats stats{.loss_sum = ce.sum, .count = ce.count, .correct = ce.correct, .lm = {}};
  if (config_.aux_lm > 0.0f) stats.lm = body_.evaluate(batch.tokens);
  return stats;
}

Tensor TransformerClassifier::logits(const ClassifierBatch& batch, std::vector<Tensor>* attention) const {
  const Tensor h = body_.hidden(batch.tokens, attention);
  return head_.forward(pooled(h, batch.read_at), nullptr);
}

}  // namespace attn::transformer

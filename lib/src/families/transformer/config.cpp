// TransformerConfig: validation, the names of its enums, its /config attributes; the BERT
// masking of a batch for the masked language model, and CMLM's masking of the targets.
#include <cmath>
#include <numeric>
#include <sstream>

#include "attn/core/enum_names.hpp"
#include "attn/families/transformer/model.hpp"
#include "attn/io/config_fields.hpp"
#include "attn/io/config_limits.hpp"

namespace attn::transformer {
namespace {

std::string str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

[[noreturn]] void bad(const std::string& field, const std::string& want, const std::string& got) {
  throw ConfigError("transformer config: " + field + " must be " + want + ", got " + got);
}

void unit_interval(const std::string& field, float value) {
  if (!(value >= 0.0f && value < 1.0f)) bad(field, "in [0, 1)", str(value));
}

}  // namespace

namespace {
constexpr EnumNames<TransformerArch, 4> kArchNames{{{TransformerArch::encdec, "encdec"},
                                                    {TransformerArch::lm, "lm"},
                                                    {TransformerArch::mlm, "mlm"},
                                                    {TransformerArch::cmlm, "cmlm"}}};
constexpr EnumNames<PositionalKind, 2> kPositionalNames{
    {{PositionalKind::sinusoidal, "sinusoidal"}, {PositionalKind::learned, "learned"}}};
constexpr EnumNames<nn::NormPosition, 2> kNormNames{{{nn::NormPosition::post, "post"}, {nn::NormPosition::pre, "pre"}}};
constexpr EnumNames<TieEmbeddings, 3> kTieNames{
    {{TieEmbeddings::none, "none"}, {TieEmbeddings::output, "output"}, {TieEmbeddings::all, "all"}}};
constexpr EnumNames<DecoderInputs, 2> kDecoderInputsNames{
    {{DecoderInputs::mask, "mask"}, {DecoderInputs::copy, "copy"}}};
constexpr EnumNames<LengthRule, 2> kLengthRuleNames{{{LengthRule::predictor, "predictor"}, {LengthRule::eos, "eos"}}};
constexpr EnumNames<TargetMasking, 3> kTargetMaskingNames{
    {{TargetMasking::uniform, "uniform"}, {TargetMasking::all, "all"}, {TargetMasking::glancing, "glancing"}}};
}  // namespace

const char* arch_name(TransformerArch arch) { return enum_name(kArchNames, arch); }
const char* positional_name(PositionalKind kind) { return enum_name(kPositionalNames, kind); }
const char* norm_name(nn::NormPosition norm) { return enum_name(kNormNames, norm); }
const char* tie_embeddings_name(TieEmbeddings tie) { return enum_name(kTieNames, tie); }
const char* target_masking_name(TargetMasking masking) { return enum_name(kTargetMaskingNames, masking); }
const char* length_rule_name(LengthRule rule) { return enum_name(kLengthRuleNames, rule); }
LengthRule length_rule_from_string(const std::string& name) {
  return parse_enum(kLengthRuleNames, "length_rule", name);
}
const char* decoder_inputs_name(DecoderInputs inputs) { return enum_name(kDecoderInputsNames, inputs); }
DecoderInputs decoder_inputs_from_string(const std::string& name) {
  return parse_enum(kDecoderInputsNames, "decoder_inputs", name);
}
TargetMasking target_masking_from_string(const std::string& name) {
  return parse_enum(kTargetMaskingNames, "target_masking", name);
}
TransformerArch arch_from_string(const std::string& name) { return parse_enum(kArchNames, "arch", name); }
PositionalKind positional_from_string(const std::string& name) {
  return parse_enum(kPositionalNames, "positional encoding", name);
}
TieEmbeddings tie_embeddings_from_string(const std::string& name) {
  return parse_enum(kTieNames, "tie_embeddings", name);
}
nn::NormPosition norm_from_string(const std::string& name) { return parse_enum(kNormNames, "norm position", name); }

void TransformerConfig::validate() const {
  // A vocabulary holds the 4 special ids and at least one regular token.
  io::check_range("transformer", "tgt_vocab", tgt_vocab, data::kFirstRegularToken + 1, io::kMaxVocab);
  if (encoder_decoder()) {
    io::check_range("transformer", "src_vocab", src_vocab, data::kFirstRegularToken + 1, io::kMaxVocab);
    if (shared_vocab() && src_vocab != tgt_vocab)
      bad("src_vocab", "equal to tgt_vocab " + std::to_string(tgt_vocab) + " with tie_embeddings all",
          std::to_string(src_vocab));
  }
  io::check_range("transformer", "d_model", d_model, 1, io::kMaxWidth);
  io::check_range("transformer", "heads", heads, 1, io::kMaxCount);
  if (d_model % heads != 0)
    bad("d_model", "a multiple of heads " + std::to_string(heads), std::to_string(d_model));
  io::check_range("transformer", "d_ff", d_ff, 1, io::kMaxWidth);
  if (arch != TransformerArch::lm) io::check_range("transformer", "enc_layers", enc_layers, 1, io::kMaxCount);
  if (arch != TransformerArch::mlm) io::check_range("transformer", "dec_layers", dec_layers, 1, io::kMaxCount);
  unit_interval("dropout", dropout);
  io::check_range("transformer", "max_len", max_len, 2, io::kMaxLength);
  io::check_range("transformer", "attn_window", attn_window, -1, io::kMaxLength);
  unit_interval("label_smoothing", label_smoothing);
  if (!(length_loss_weight >= 0.0f && std::isfinite(length_loss_weight)))
    bad("length_loss_weight", ">= 0", str(length_loss_weight));
  if (!(glancing_ratio >= 0.0f && glancing_ratio <= 1.0f)) bad("glancing_ratio", "in [0, 1]", str(glancing_ratio));
  io::check_range("transformer", "eos_margin", eos_margin, 0, io::kMaxLength);   // positions are capped by max_len
}

std::map<std::string, io::AttrValue> TransformerConfig::to_attrs() const { return io::write_fields(*this); }

TransformerConfig TransformerConfig::from_attrs(const std::map<std::string, io::AttrValue>& a,
                                                const std::string& source) {
  return io::read_fields<TransformerConfig>(a, source);
}

namespace {

// mask_tokens with row b drawing from row_rng(b).
template <class RowRng>
data::TokenBatch mask_rows(const data::TokenBatch& batch, RowRng&& row_rng, int32_t mask_id, int64_t vocab,
                           const MaskingOptions& o) {
  check_tensor(batch.src, {kAny, kAny}, "mask_tokens: src [B, S]", DType::i32);
  const int64_t B = batch.src.dim(0), S = batch.src.dim(1);
  check_tensor(batch.src_len, {B}, "mask_tokens: src_len [B]", DType::i32);
  if (vocab <= data::kFirstRegularToken)
    throw ConfigError("mask_tokens: vocab must be > " + std::to_string(data::kFirstRegularToken) + ", got " +
                      std::to_string(vocab));
  if (!(o.select >= 0 && o.select <= 1 && o.replace_mask >= 0 && o.replace_random >= 0 &&
        o.replace_mask + o.replace_random <= 1))
    throw ConfigError("mask_tokens: probabilities must lie in [0, 1] with replace_mask + replace_random <= 1");
  if (!o.only.empty() && static_cast<int64_t>(o.only.size()) != vocab)
    throw ConfigError("mask_tokens: `only` has " + std::to_string(o.only.size()) + " flags for a vocabulary of " +
                      std::to_string(vocab));
  const auto eligible = [&o, vocab](int32_t tok) {
    return o.only.empty() || (tok < vocab && o.only[static_cast<size_t>(tok)]);
  };
  data::TokenBatch out;
  out.src = batch.src.clone();
  out.src_len = batch.src_len;
  out.tgt = Tensor({B, S}, DType::i32);   // PAD everywhere: ignored by the loss
  out.tgt_len = batch.src_len;
  out.segments = batch.segments;
  int32_t* in = out.src.idata();
  int32_t* tgt = out.tgt.idata();
  const int32_t* len = batch.src_len.idata();
  for (int64_t b = 0; b < B; ++b) {
    Rng& rng = row_rng(b);
    const int64_t n = std::min<int64_t>(len[b], S);
    for (int64_t t = 0; t < n; ++t) {
      int32_t& tok = in[b * S + t];
      if (tok < data::kFirstRegularToken || !eligible(tok) || !rng.bernoulli(o.select)) continue;
      tgt[b * S + t] = tok;
      const float u = rng.uniform();
      if (u < o.replace_mask)
        tok = mask_id;
      else if (u < o.replace_mask + o.replace_random)
        tok = static_cast<int32_t>(data::kFirstRegularToken + rng.uniform_int(vocab - data::kFirstRegularToken));
    }
  }
  return out;
}

}  // namespace

data::TokenBatch mask_tokens(const data::TokenBatch& batch, Rng& rng, int32_t mask_id, int64_t vocab,
                             const MaskingOptions& o) {
  return mask_rows(batch, [&](int64_t) -> Rng& { return rng; }, mask_id, vocab, o);
}

data::TokenBatch mask_examples(const data::TokenBatch& batch, uint64_t seed, std::span<const int64_t> examples,
                               int32_t mask_id, int64_t vocab, const MaskingOptions& o) {
  if (static_cast<int64_t>(examples.size()) != batch.src.dim(0))
    throw ShapeError("mask_examples: " + std::to_string(examples.size()) + " example ids for a batch of " +
                     std::to_string(batch.src.dim(0)) + " rows");
  Rng row;
  return mask_rows(batch, [&](int64_t b) -> Rng& { return row = Rng(seed).fork(static_cast<uint64_t>(examples[b])); },
                   mask_id, vocab, o);
}

namespace {

// cmlm_mask with row b drawing from row_rng(b).
template <class RowRng>
CmlmBatch cmlm_rows(const data::TokenBatch& batch, RowRng&& row_rng, int32_t mask_id, TargetMasking masking) {
  check_tensor(batch.src, {kAny, kAny}, "cmlm_mask: src [B, S]", DType::i32);
  const int64_t B = batch.src.dim(0);
  check_tensor(batch.src_len, {B}, "cmlm_mask: src_len [B]", DType::i32);
  check_tensor(batch.tgt, {B, kAny}, "cmlm_mask: tgt [B, T]", DType::i32);
  check_tensor(batch.tgt_len, {B}, "cmlm_mask: tgt_len [B]", DType::i32);
  const int64_t T = batch.tgt.dim(1);
  std::vector<int32_t> len(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const int32_t n = batch.tgt_len.idata()[b];
    if (n < 1 || n > T)
      throw DataError("cmlm_mask: target length " + std::to_string(n) + " of row " + std::to_string(b) +
                      " is outside [1, " + std::to_string(T) + "] (a target ends with EOS)");
    len[static_cast<size_t>(b)] = n - 1;   // without EOS
  }
  const int64_t Ty = std::max<int64_t>(1, T - 1);
  CmlmBatch out{.src = batch.src,
                .src_len = batch.src_len,
                .dec_in = Tensor({B, Ty}, DType::i32),
                .targets = Tensor({B, Ty}, DType::i32),
                .tgt_len = Tensor::from_ints({B}, len)};
  std::vector<int64_t> order;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = len[static_cast<size_t>(b)];
    const int32_t* y = batch.tgt.idata() + b * T;
    int32_t* in = out.dec_in.idata() + b * Ty;
    int32_t* tgt = out.targets.idata() + b * Ty;
    std::copy_n(y, n, in);
    if (n == 0) continue;
    if (masking != TargetMasking::uniform) {   // every position
      std::copy_n(y, n, tgt);
      std::fill_n(in, n, mask_id);
      continue;
    }
    Rng& rng = row_rng(b);
    const int64_t k = 1 + rng.uniform_int(n);   // masked tokens, uniform in 1..n
    order.resize(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    for (int64_t i = 0; i < k; ++i) {   // the first k of a uniform random permutation
      std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(i + rng.uniform_int(n - i))]);
      const int64_t t = order[static_cast<size_t>(i)];
      tgt[t] = y[t];
      in[t] = mask_id;
    }
  }
  return out;
}

}  // namespace

CmlmBatch cmlm_mask(const data::TokenBatch& batch, Rng& rng, int32_t mask_id, TargetMasking masking) {
  return cmlm_rows(
      batch, [&](int64_t) -> Rng& { return rng; }, mask_id, masking);
}

CmlmBatch cmlm_mask_examples(const data::TokenBatch& batch, uint64_t seed, std::span<const int64_t> examples,
                             int32_t mask_id, TargetMasking masking) {
  if (static_cast<int64_t>(examples.size()) != batch.src.dim(0))
    throw ShapeError("cmlm_mask_examples: " + std::to_string(examples.size()) + " example ids for a batch of " +
                     std::to_string(batch.src.dim(0)) + " rows");
  Rng row;
  return cmlm_rows(
      batch, [&](int64_t b) -> Rng& { return row = Rng(seed).fork(static_cast<uint64_t>(examples[b])); }, mask_id,
      masking);
}

CmlmBatch glance_targets(const CmlmBatch& all_masked, const Tensor& predictions, float ratio, Rng& rng) {
  const int64_t B = all_masked.dec_in.dim(0), T = all_masked.dec_in.dim(1);
  check_tensor(predictions, {B, T}, "glance_targets: predictions [B, T]", DType::i32);
  if (!(ratio >= 0.0f && ratio <= 1.0f))
    throw ConfigError("glance_targets: ratio must be in [0, 1], got " + std::to_string(ratio));
  CmlmBatch out = all_masked;
  out.dec_in = all_masked.dec_in.clone();
  out.targets = all_masked.targets.clone();
  std::vector<int64_t> order;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = all_masked.tgt_len.idata()[b];
    int32_t* in = out.dec_in.idata() + b * T;
    int32_t* tgt = out.targets.idata() + b * T;
    const int32_t* pred = predictions.idata() + b * T;
    int64_t wrong = 0;
    for (int64_t t = 0; t < n; ++t) wrong += pred[t] != tgt[t];
    const int64_t reveal = std::min<int64_t>(
        std::max<int64_t>(n - 1, 0), static_cast<int64_t>(std::floor(ratio * static_cast<float>(wrong) + 0.5f)));
    order.resize(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    for (int64_t i = 0; i < reveal; ++i) {   // the first `reveal` of a uniform random permutation
      std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(i + rng.uniform_int(n - i))]);
      const int64_t t = order[static_cast<size_t>(i)];
      in[t] = tgt[t];
      tgt[t] = data::kPad;
    }
  }
  return out;
}

Tensor uniform_copy_ids(const Tensor& src, const Tensor& src_len, const Tensor& tgt_len, int64_t T) {
  check_tensor(src, {kAny, kAny}, "uniform_copy_ids: src [B, S]", DType::i32);
  const int64_t B = src.dim(0), S = src.dim(1);
  check_tensor(src_len, {B}, "uniform_copy_ids: src_len [B]", DType::i32);
  check_tensor(tgt_len, {B}, "uniform_copy_ids: tgt_len [B]", DType::i32);
  Tensor out({B, T}, DType::i32);   // PAD-filled
  for (int64_t b = 0; b < B; ++b) {
    const int64_t x = src_len.idata()[b], n = tgt_len.idata()[b];
    if (x < 1 || x > S || n < 0 || n > T)
      throw DataError("uniform_copy_ids: row " + std::to_string(b) + " has source length " + std::to_string(x) +
                      " (of at most " + std::to_string(S) + ") and target length " + std::to_string(n) +
                      " (of at most " + std::to_string(T) + ")");
    for (int64_t t = 0; t < n; ++t) out.idata()[b * T + t] = src.idata()[b * S + t * x / n];
  }
  return out;
}

data::TokenBatch eos_padded_targets(const data::TokenBatch& batch, const TransformerConfig& config) {
  check_tensor(batch.src_len, {kAny}, "eos_padded_targets: src_len [B]", DType::i32);
  const int64_t B = batch.src_len.dim(0);
  check_tensor(batch.tgt, {B, kAny}, "eos_padded_targets: tgt [B, T]", DType::i32);
  check_tensor(batch.tgt_len, {B}, "eos_padded_targets: tgt_len [B]", DType::i32);
  const int64_t T = batch.tgt.dim(1);
  std::vector<int64_t> positions(static_cast<size_t>(B));   // per row: y and its EOS padding
  int64_t width = 1;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = batch.tgt_len.idata()[b];   // |y| + 1
    if (n < 1 || n > T)
      throw DataError("eos_padded_targets: target length " + std::to_string(n) + " of row " + std::to_string(b) +
                      " is outside [1, " + std::to_string(T) + "] (a target ends with EOS)");
    positions[static_cast<size_t>(b)] = std::max(config.eos_positions(batch.src_len.idata()[b]), n);
    width = std::max(width, positions[static_cast<size_t>(b)] + 1);
  }
  data::TokenBatch out = batch;
  out.tgt = Tensor({B, width}, DType::i32);   // PAD-filled
  out.tgt_len = Tensor({B}, DType::i32);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = batch.tgt_len.idata()[b], L = positions[static_cast<size_t>(b)];
    int32_t* row = out.tgt.idata() + b * width;
    std::copy_n(batch.tgt.idata() + b * T, n - 1, row);
    std::fill(row + n - 1, row + L + 1, data::kEos);
    out.tgt_len.idata()[b] = static_cast<int32_t>(L + 1);
  }
  return out;
}

}  // namespace attn::transformer

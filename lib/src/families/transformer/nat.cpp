// Mask-predict over a cmlm Transformer (nat.hpp): the length beam, the iterations over a scorer,
// and the choice of a candidate per source.
#include "attn/families/transformer/nat.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "attn/core/error.hpp"
#include "attn/core/row_blocks.hpp"
#include "attn/core/threading.hpp"
#include "attn/data/vocab.hpp"
#include "attn/nn/attention_decoder.hpp"   // nn::gather_rows
#include "attn/ops/softmax.hpp"

namespace attn::transformer {
namespace {

// Predicts the masked positions of `tokens` from their logits [R, Lmax, V]: argmax of the
// log-softmax with PAD, BOS and (unless allow_eos: the cut at </s>) EOS forbidden, written into
// tokens and log_probs. One pass per row over the allowed ids: the first maximum m, then
// log p = m - log sum exp(logit - m); rows split over the threads (each row's result is the same
// on any number).
void predict_masked(const Tensor& logits, const std::vector<uint8_t>& is_masked, bool allow_eos, Tensor& tokens,
                    Tensor& log_probs) {
  const int64_t V = logits.dim(2), rows = tokens.numel();
  static_assert(data::kPad == 0 && data::kBos == 1 && data::kEos == 2, "the forbidden ids lead the vocabulary");
  const int32_t first = allow_eos ? data::kEos : data::kEos + 1;
  std::vector<int64_t> masked;
  for (int64_t i = 0; i < rows; ++i)
    if (is_masked[static_cast<size_t>(i)]) masked.push_back(i);
  // Small batches stay on the calling thread, where starting a parallel region would outweigh the work.
  const int parts = static_cast<int64_t>(masked.size()) * V >= (int64_t{1} << 16) ? num_parts() : 1;
  over_row_blocks(std::vector<int64_t>(masked.size(), 1), parts, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t i = masked[static_cast<size_t>(k)];
      const float* row = logits.data() + i * V;
      const float* best = std::max_element(row + first, row + V);   // the lowest id among equals
      double sum = 0.0;
      for (int64_t v = first; v < V; ++v) sum += std::exp(static_cast<double>(row[v] - *best));
      tokens.idata()[i] = static_cast<int32_t>(best - row);
      log_probs.data()[i] = static_cast<float>(-std::log(sum));
    }
  });
}

// The weights of the pass behind the final tokens (nat.hpp, mask_predict): the decoder re-run on
// the last iteration's inputs, history and masked [N, I, L] (the positions it filled: up to the
// first PAD); memory [N, 1 + S, D]. Kept: the output's rows and columns, out_len[n] of them
// (fewer than the filled positions after the cut at </s>), in [N, H, W, W] and [N, H, W, S], W the
// longest output (at least 1).
NamedTensors last_pass_attention(const Transformer& model, const Tensor& memory, const Tensor& src,
                                 const Tensor& src_len, const Tensor& history, const Tensor& masked,
                                 const std::vector<int64_t>& out_len) {
  const int64_t N = history.dim(0), I = history.dim(1), L = history.dim(2), S = memory.dim(1) - 1;
  Tensor inputs({N, L}, DType::i32), lengths({N}, DType::i32);
  for (int64_t n = 0; n < N; ++n) {
    const int32_t* tok = history.idata() + (n * I + I - 1) * L;
    const int32_t* was_masked = masked.idata() + (n * I + I - 1) * L;
    int64_t len = 0;
    while (len < L && tok[len] != data::kPad) ++len;
    lengths.idata()[n] = static_cast<int32_t>(len);
    for (int64_t t = 0; t < L; ++t) inputs.idata()[n * L + t] = was_masked[t] ? model.mask_token_id() : tok[t];
  }
  std::vector<Tensor> self, cross;
  model.nat_logits(inputs, lengths, memory, src, src_len, &self, &cross);
  const int64_t W = std::max<int64_t>(1, *std::max_element(out_len.begin(), out_len.end()));
  NamedTensors out;
  for (size_t l = 0; l < self.size(); ++l) {
    const int64_t H = self[l].dim(1);
    Tensor w({N, H, W, W}), c({N, H, W, S});   // zeros past an output; [LENGTH]'s column dropped
    for (int64_t n = 0; n < N; ++n) {
      const int64_t len = out_len[static_cast<size_t>(n)];
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < len; ++t) {
          std::copy_n(self[l].data() + ((n * H + h) * L + t) * L, len, w.data() + ((n * H + h) * W + t) * W);
          std::copy_n(cross[l].data() + ((n * H + h) * L + t) * (S + 1) + 1, S, c.data() + ((n * H + h) * W + t) * S);
        }
    }
    out.emplace_back("self/layer" + std::to_string(l), std::move(w));
    out.emplace_back("cross/layer" + std::to_string(l), std::move(c));
  }
  return out;
}

}  // namespace

CmlmBatch glancing_batch(const Transformer& model, const data::TokenBatch& batch, Rng& rng) {
  const CmlmBatch all = cmlm_mask(batch, rng, model.mask_token_id(), TargetMasking::all);
  const Tensor memory = model.encode(all.src, all.src_len);
  const Tensor logits = model.nat_logits(all.dec_in, all.tgt_len, memory, all.src, all.src_len);   // [B, T, V]
  const int64_t rows = all.dec_in.numel(), V = logits.dim(2);
  Tensor predictions(all.dec_in.shape(), DType::i32);
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = logits.data() + i * V;
    predictions.idata()[i] = static_cast<int32_t>(std::max_element(row, row + V) - row);
  }
  return glance_targets(all, predictions, model.config().glancing_ratio, rng);
}

void check_mask_predict_options(const TransformerConfig& config, const MaskPredictOptions& o) {
  if (o.iterations < 0)
    throw ConfigError("mask-predict: iterations must be >= 1 (or 0: the model's default), got " +
                      std::to_string(o.iterations));
  if (config.length_rule == LengthRule::eos && o.length_beam != 1)
    throw ConfigError("mask-predict: a model that cuts its output at </s> decodes one length per sentence (length_beam "
                      "must be 1, got " +
                      std::to_string(o.length_beam) + ")");
  if (o.length_beam < 1 || o.length_beam > config.max_len + 1)
    throw ConfigError("mask-predict: length_beam must be in [1, max_len + 1 = " + std::to_string(config.max_len + 1) +
                      "] (the target lengths 0.." + std::to_string(config.max_len) + " the model can produce), got " +
                      std::to_string(o.length_beam));
  if (o.max_len < 0) throw ConfigError("mask-predict: max_len must be >= 0, got " + std::to_string(o.max_len));
}

MaskPredictSearch mask_predict_search(const NatScorer& score, const std::vector<int32_t>& lengths, int64_t V,
                                      int32_t mask_id, int64_t iterations, bool allow_eos) {
  if (iterations < 1) throw ConfigError("mask-predict: iterations must be >= 1, got " + std::to_string(iterations));
  const auto R = static_cast<int64_t>(lengths.size());
  int64_t L = 1;
  for (const int32_t n : lengths) {
    if (n < 0) throw ConfigError("mask-predict: a negative length " + std::to_string(n));
    L = std::max<int64_t>(L, n);
  }
  const int64_t I = iterations;
  MaskPredictSearch s{.tokens = Tensor({R, L}, DType::i32),
                      .log_probs = Tensor({R, L}),
                      .history = Tensor({R, I, L}, DType::i32),
                      .masked = Tensor({R, I, L}, DType::i32)};
  const Tensor len = Tensor::from_ints({R}, lengths);
  std::vector<uint8_t> is_masked(static_cast<size_t>(R * L));
  std::vector<int64_t> order;
  for (int64_t it = 0; it < I; ++it) {
    std::fill(is_masked.begin(), is_masked.end(), uint8_t{0});
    bool any = false;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t n = lengths[static_cast<size_t>(r)];
      // Iteration 0 masks all n; iteration t the floor(n (T - t) / T) least probable.
      const int64_t k = it == 0 ? n : n * (I - it) / I;
      if (k == 0) continue;
      any = true;
      const float* lp = s.log_probs.data() + r * L;
      order.resize(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [lp](int64_t a, int64_t b) { return lp[a] < lp[b]; });
      for (int64_t i = 0; i < k; ++i) {
        const int64_t t = order[static_cast<size_t>(i)];
        is_masked[static_cast<size_t>(r * L + t)] = 1;
        s.tokens.idata()[r * L + t] = mask_id;
      }
    }
    if (any) {
      const Tensor logits = score(s.tokens, len);
      check_tensor(logits, {R, L, V}, "mask-predict: the scorer's logits [R, Lmax, V]");
      predict_masked(logits, is_masked, allow_eos, s.tokens, s.log_probs);
    }
    for (int64_t r = 0; r < R; ++r)
      for (int64_t t = 0; t < L; ++t) {
        s.history.idata()[(r * I + it) * L + t] = s.tokens.idata()[r * L + t];
        s.masked.idata()[(r * I + it) * L + t] = is_masked[static_cast<size_t>(r * L + t)];
      }
  }
  return s;
}

decode::Decoded mask_predict(const Transformer& model, const Tensor& src, const Tensor& src_len,
                             const MaskPredictOptions& options) {
  const TransformerConfig& cfg = model.config();
  if (cfg.arch != TransformerArch::cmlm)
    throw ConfigError("mask-predict needs a cmlm model, this one is '" + std::string(arch_name(cfg.arch)) + "'");
  check_mask_predict_options(cfg, options);
  const bool cut_at_eos = cfg.length_rule == LengthRule::eos;
  MaskPredictOptions o = options;
  if (o.iterations == 0) o.iterations = cfg.default_iterations();
  check_tensor(src, {kAny, kAny}, "mask-predict: src [N, S]", DType::i32);
  const int64_t N = src.dim(0);
  check_tensor(src_len, {N}, "mask-predict: src_len [N]", DType::i32);
  decode::Decoded out;
  out.tokens.resize(static_cast<size_t>(N));
  out.scores.assign(static_cast<size_t>(N), 0.0f);
  if (N == 0) return out;

  // The length beam: the L most likely lengths in [0, longest] of each source.
  const Tensor memory = model.encode(src, src_len);   // [N, 1 + S, D]
  const int64_t C = cfg.length_classes(), longest = o.max_len > 0 ? std::min(o.max_len, cfg.max_len) : cfg.max_len;
  Tensor length_lp;   // [N, C], the predictor's (not with the cut at </s>)
  if (!cut_at_eos) {
    length_lp = model.length_logits(memory);
    ops::log_softmax_rows_inplace(length_lp.data(), N, C);
  }
  std::vector<int64_t> sentence;                               // per candidate row: its source
  std::vector<int32_t> lengths;                                // per candidate row: its length
  std::vector<int64_t> first(static_cast<size_t>(N) + 1, 0);   // candidates of source n: first[n] .. first[n+1]
  std::vector<int32_t> all(static_cast<size_t>(longest) + 1);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t x = src_len.idata()[n];
    if (cut_at_eos) {   // one candidate: the positions the model fills, cut at </s> below
      sentence.push_back(n);
      lengths.push_back(static_cast<int32_t>(std::min(cfg.eos_positions(x), longest)));
      first[static_cast<size_t>(n) + 1] = static_cast<int64_t>(sentence.size());
      continue;
    }
    const float* lp = length_lp.data() + n * C;
    const auto cls = [&](int32_t len) { return lp[len - x + cfg.max_len]; };
    std::iota(all.begin(), all.end(), 0);
    std::stable_sort(all.begin(), all.end(), [&](int32_t a, int32_t b) { return cls(a) > cls(b); });
    const int64_t k = std::min<int64_t>(o.length_beam, static_cast<int64_t>(all.size()));
    for (int64_t i = 0; i < k; ++i) {
      sentence.push_back(n);
      lengths.push_back(all[static_cast<size_t>(i)]);
    }
    first[static_cast<size_t>(n) + 1] = static_cast<int64_t>(sentence.size());
  }
  const Tensor cand_memory = nn::gather_rows(memory, sentence), cand_src = nn::gather_rows(src, sentence),
               cand_src_len = nn::gather_rows(src_len, sentence);
  const MaskPredictSearch s = mask_predict_search(
      [&](const Tensor& tokens, const Tensor& len) {
        return model.nat_logits(tokens, len, cand_memory, cand_src, cand_src_len);
      },
      lengths, cfg.tgt_vocab, model.mask_token_id(), o.iterations, /*allow_eos=*/cut_at_eos);

  // The best candidate of each source by mean log-probability (with the cut at </s>: the one,
  // its output the tokens before the first </s>, scored with that </s>).
  const int64_t L = s.tokens.dim(1), I = o.iterations;
  std::vector<int64_t> chosen(static_cast<size_t>(N)), out_len(static_cast<size_t>(N));
  int64_t width = 1;
  for (int64_t n = 0; n < N; ++n) {
    if (cut_at_eos) {
      const int64_t r = first[static_cast<size_t>(n)], filled = lengths[static_cast<size_t>(r)];
      const int32_t* tok = s.tokens.idata() + r * L;
      const int64_t len = std::find(tok, tok + filled, data::kEos) - tok, scored = std::min(len + 1, filled);
      double sum = 0;
      for (int64_t t = 0; t < scored; ++t) sum += s.log_probs.data()[r * L + t];
      chosen[static_cast<size_t>(n)] = r;
      out_len[static_cast<size_t>(n)] = len;
      out.tokens[static_cast<size_t>(n)].assign(tok, tok + len);
      out.scores[static_cast<size_t>(n)] = scored == 0 ? 0.0f : static_cast<float>(sum / static_cast<double>(scored));
      width = std::max(width, filled);
      continue;
    }
    int64_t best = first[static_cast<size_t>(n)];
    double best_score = -std::numeric_limits<double>::infinity();
    for (int64_t r = first[static_cast<size_t>(n)]; r < first[static_cast<size_t>(n) + 1]; ++r) {
      const int64_t len = lengths[static_cast<size_t>(r)];
      if (len == 0) continue;
      double sum = 0;
      for (int64_t t = 0; t < len; ++t) sum += s.log_probs.data()[r * L + t];
      if (sum / static_cast<double>(len) > best_score) {
        best_score = sum / static_cast<double>(len);
        best = r;
      }
    }
    chosen[static_cast<size_t>(n)] = best;
    const int64_t len = lengths[static_cast<size_t>(best)];
    out_len[static_cast<size_t>(n)] = len;
    const int32_t* tok = s.tokens.idata() + best * L;
    out.tokens[static_cast<size_t>(n)].assign(tok, tok + len);
    out.scores[static_cast<size_t>(n)] = len == 0 ? 0.0f : static_cast<float>(best_score);
    width = std::max(width, len);
  }
  Tensor history({N, I, width}, DType::i32), masked({N, I, width}, DType::i32);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t it = 0; it < I; ++it) {
      const int64_t from = (chosen[static_cast<size_t>(n)] * I + it) * L, to = (n * I + it) * width;
      std::copy_n(s.history.idata() + from, width, history.idata() + to);
      std::copy_n(s.masked.idata() + from, width, masked.idata() + to);
    }
  if (o.want_attention) out.attention = last_pass_attention(model, memory, src, src_len, history, masked, out_len);
  out.outputs.emplace_back("iterations/tokens", std::move(history));
  out.outputs.emplace_back("iterations/masked", std::move(masked));
  return out;
}

}  // namespace attn::transformer

// Greedy search, beam search and sampling of a Transformer: the searches of decode/search.hpp
// over a Stepper whose rows (one per sentence or hypothesis) share one DecoderState; rows that
// finish or lose their place in the beam are dropped from it by DecoderState::select.
#include "attn/families/transformer/decode.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/data/vocab.hpp"

namespace attn::transformer {
namespace {

using data::kBos;

// The Transformer as a Stepper: its rows share one DecoderState (the KV caches), which
// DecoderState::select gathers. Uncached, every step re-runs the whole prefix instead (for
// tests), so the rows' fed tokens are kept too.
class TransformerStepper final : public decode::Stepper {
 public:
  // capacity: decoder positions per row (<= the model's max_len); memory/src_len: encdec only.
  TransformerStepper(const Transformer& model, const Tensor& memory, const Tensor& src_len, int64_t capacity,
                     int64_t rows, bool use_cache)
      : model_(model), use_cache_(use_cache), capacity_(capacity),
        state_(model.start_decoding(memory, src_len, capacity, rows)) {
    if (!use_cache_) fed_.assign(static_cast<size_t>(rows), {});
  }

  int64_t vocab() const override { return model_.vocab_out(); }
  int64_t capacity() const override { return capacity_; }

  // Cached: one decoder step over the KV caches. Uncached: the whole prefix again.
  Tensor step(const std::vector<int32_t>& next) override {
    const int64_t R = static_cast<int64_t>(next.size()), V = model_.vocab_out();
    if (use_cache_) return model_.decode_step(Tensor::from_ints({R, 1}, next), state_).reshape({R, V});
    for (int64_t r = 0; r < R; ++r) fed_[static_cast<size_t>(r)].push_back(next[static_cast<size_t>(r)]);
    const int64_t T = static_cast<int64_t>(fed_[0].size()), D = model_.config().d_model;
    Tensor prefix({R, T}, DType::i32);
    for (int64_t r = 0; r < R; ++r)
      std::copy(fed_[static_cast<size_t>(r)].begin(), fed_[static_cast<size_t>(r)].end(), prefix.idata() + r * T);
    const Tensor h = model_.decode_prefix(prefix, state_.memory, state_.src_len);   // [B, T, D]
    Tensor last({R, D});
    for (int64_t r = 0; r < R; ++r) std::copy_n(h.data() + (r * T + T - 1) * D, D, last.data() + r * D);
    return model_.output_logits(last);
  }

  void keep(const std::vector<int64_t>& rows) override {
    state_.select(rows);
    if (use_cache_) return;
    std::vector<std::vector<int32_t>> f;
    f.reserve(rows.size());
    for (int64_t r : rows) f.push_back(fed_[static_cast<size_t>(r)]);
    fed_ = std::move(f);
  }

 private:
  const Transformer& model_;
  bool use_cache_;
  int64_t capacity_;
  DecoderState state_;
  std::vector<std::vector<int32_t>> fed_;   // uncached: per row, BOS and every token fed
};

// Teacher-forced attention weights of the decoded sentences: the decoder re-run over the
// positions each sentence was fed (BOS, any prompt, its tokens but a last one that was never
// fed), padded to the longest, rows past a sentence's own zeroed.
NamedTensors attention_of(const Transformer& model, const Tensor& memory, const Tensor& src_len,
                          const decode::SearchResult& r, const decode::Prompts& prompts) {
  const int64_t N = static_cast<int64_t>(r.tokens.size());
  std::vector<std::vector<int32_t>> fed(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    std::vector<int32_t>& f = fed[static_cast<size_t>(n)];
    const std::vector<int32_t>& tokens = r.tokens[static_cast<size_t>(n)];
    f.push_back(data::kBos);
    if (prompts.lengths.defined()) {
      const int32_t* p = prompts.tokens.idata() + n * prompts.tokens.dim(1);
      f.insert(f.end(), p, p + prompts.lengths.idata()[n]);
    }
    f.insert(f.end(), tokens.begin(), tokens.end() - (r.ended[static_cast<size_t>(n)] || tokens.empty() ? 0 : 1));
  }
  int64_t T = 1;
  for (const auto& f : fed) T = std::max<int64_t>(T, static_cast<int64_t>(f.size()));
  Tensor prefix({N, T}, DType::i32);   // PAD-filled
  for (int64_t n = 0; n < N; ++n) std::copy(fed[n].begin(), fed[n].end(), prefix.idata() + n * T);
  const bool encdec = model.config().arch == TransformerArch::encdec;
  std::vector<Tensor> self, cross;
  model.decode_prefix(prefix, memory, src_len, &self, encdec ? &cross : nullptr);
  for (std::vector<Tensor>* list : {&self, &cross})
    for (Tensor& w : *list) {
      if (w.empty()) continue;
      const int64_t H = w.dim(1), X = w.dim(3);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t t = static_cast<int64_t>(fed[n].size()); t < T; ++t)
            std::fill_n(w.data() + ((n * H + h) * T + t) * X, X, 0.0f);
    }
  NamedTensors out;
  for (size_t l = 0; l < self.size(); ++l) {
    out.emplace_back("self/layer" + std::to_string(l), std::move(self[l]));
    if (encdec) out.emplace_back("cross/layer" + std::to_string(l), std::move(cross.at(l)));
  }
  return out;
}

void check_inputs(const Transformer& model, const Tensor& input, const Tensor& input_len, int64_t max_len,
                  const char* what) {
  if (model.config().arch == TransformerArch::mlm)
    throw ConfigError(std::string(what) + ": an mlm model has no decoder");
  if (model.config().arch == TransformerArch::cmlm)
    throw ConfigError(std::string(what) + ": a cmlm model is non-autoregressive (decode it with mask_predict)");
  check_tensor(input, {kAny, kAny}, std::string(what) + ": input [N, L]", DType::i32);
  check_tensor(input_len, {input.dim(0)}, std::string(what) + ": lengths [N]", DType::i32);
  for (int64_t n = 0; n < input.dim(0); ++n)
    if (input_len.idata()[n] < 0 || input_len.idata()[n] > input.dim(1))
      throw DataError(std::string(what) + ": length " + std::to_string(input_len.idata()[n]) + " of row " +
                      std::to_string(n) + " is outside [0, " + std::to_string(input.dim(1)) + "]");
  if (max_len < 1) throw ConfigError(std::string(what) + ": max_len must be >= 1, got " + std::to_string(max_len));
}

// Greedy search or sampling (`sampling` not null): encdec decodes `input` as the source, lm
// feeds it as each sentence's prompt.
decode::Decoded left_to_right(const Transformer& model, const Tensor& input, const Tensor& input_len,
                              const decode::SearchOptions& options, bool use_cache, const decode::Sampling* sampling,
                              Rng* rng) {
  const TransformerConfig& cfg = model.config();
  const bool encdec = cfg.arch == TransformerArch::encdec;
  const int64_t N = input.dim(0);
  int64_t longest_prompt = 0;
  if (!encdec)
    for (int64_t n = 0; n < N; ++n) longest_prompt = std::max<int64_t>(longest_prompt, input_len.idata()[n]);
  if (longest_prompt + 1 > cfg.max_len)
    throw ShapeError("decode: a prompt of " + std::to_string(longest_prompt) + " tokens does not fit max_len " +
                     std::to_string(cfg.max_len) + " with BOS");
  // Positions fed: BOS, the prompt, and every generated token but the last.
  const int64_t capacity = std::min(cfg.max_len, longest_prompt + options.max_len);

  decode::Decoded out;
  out.tokens.resize(static_cast<size_t>(N));
  out.scores.assign(static_cast<size_t>(N), 0.0f);
  if (N == 0) return out;
  Tensor memory, src_len;
  if (encdec) {
    memory = model.encode(input, input_len);
    src_len = input_len;
  }
  const decode::Prompts prompts = encdec ? decode::Prompts{} : decode::Prompts{input, input_len};
  TransformerStepper stepper(model, memory, src_len, capacity, N, use_cache);
  decode::SearchResult r = sampling ? decode::sample_search(stepper, N, options, *sampling, *rng, prompts)
                                    : decode::greedy_search(stepper, N, options, prompts);
  if (options.want_attention) out.attention = attention_of(model, memory, src_len, r, prompts);
  out.tokens = std::move(r.tokens);
  out.scores = std::move(r.scores);
  return out;
}

}  // namespace

decode::Decoded greedy(const Transformer& model, const Tensor& src, const Tensor& src_len,
                       const decode::DecodeOptions& o, bool use_cache) {
  check_inputs(model, src, src_len, o.max_len, "greedy");
  decode::SearchOptions options;
  options.max_len = o.max_len;
  options.want_attention = o.want_attention;
  return left_to_right(model, src, src_len, options, use_cache, nullptr, nullptr);
}

decode::Decoded sample(const Transformer& model, const Tensor& prompt, const Tensor& prompt_len,
                       const decode::DecodeOptions& o, const decode::Sampling& sampling, Rng& rng, bool use_cache) {
  check_inputs(model, prompt, prompt_len, o.max_len, "sample");
  if (o.beam != 1) throw ConfigError("sample: draws one continuation per prompt, beam must be 1");
  if (!(sampling.temperature >= 0.0f))
    throw ConfigError("sample: temperature must be >= 0, got " + std::to_string(sampling.temperature));
  if (sampling.top_k < 0) throw ConfigError("sample: top_k must be >= 0, got " + std::to_string(sampling.top_k));
  decode::SearchOptions options;
  options.max_len = o.max_len;
  options.want_attention = o.want_attention;
  return left_to_right(model, prompt, prompt_len, options, use_cache,
                       sampling.temperature == 0.0f ? nullptr : &sampling, &rng);   // temperature 0: greedy
}

decode::Decoded beam_search(const Transformer& model, const Tensor& src, const Tensor& src_len,
                            const decode::DecodeOptions& o, bool use_cache) {
  check_inputs(model, src, src_len, o.max_len, "beam search");
  if (model.config().arch != TransformerArch::encdec)
    throw ConfigError("beam search: needs an encdec model (use greedy or sample for an lm)");
  const decode::SearchOptions options{.max_len = o.max_len,
                                      .beam = o.beam,
                                      .length_penalty = {.kind = decode::PenaltyKind::gnmt, .alpha = o.length_penalty},
                                      .want_attention = false};
  check_search_options(options, "beam search");
  const int64_t N = src.dim(0);
  decode::Decoded out;
  out.tokens.resize(static_cast<size_t>(N));
  out.scores.assign(static_cast<size_t>(N), 0.0f);
  if (N == 0) return out;
  const Tensor memory = model.encode(src, src_len);
  TransformerStepper stepper(model, memory, src_len, std::min(model.config().max_len, o.max_len), N, use_cache);
  decode::SearchResult r = decode::beam_search(stepper, N, options);
  if (o.want_attention) out.attention = attention_of(model, memory, src_len, r, {});
  out.tokens = std::move(r.tokens);
  out.scores = std::move(r.scores);
  return out;
}

}  // namespace attn::transformer

// models::Seq2Seq decoding: greedy search and beam search with length normalisation, both
// returning the alignment (attention weights) behind every emitted token.
//
// Both run the decoder one step at a time over R rows (N sentences, or N x K hypotheses), with
// the output projection of the step's R rows as one GEMM. Beam search keeps K live hypotheses
// per sentence: each step takes the 2K best one-token extensions of all K (ties broken by
// hypothesis then token index, so K = 1 picks exactly greedy's argmax), moves those ending in
// EOS to the finished list, keeps the best K others, and stops a sentence once K hypotheses have
// finished (Wu et al. 2016 rank by length-normalised score log p / |y|^alpha).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "attn/blas/blas.hpp"
#include "attn/data/vocab.hpp"
#include "attn/models/seq2seq.hpp"
#include "seq2seq_impl.hpp"

namespace attn::models {
namespace {

using blas::Trans;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Rows `index` of x: [R, ...] -> [index.size(), ...] (new tensor).
Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& index) {
  if (!x.defined() || x.empty()) return x;
  Shape shape = x.shape();
  const int64_t row = x.numel() / shape[0];
  shape[0] = static_cast<int64_t>(index.size());
  Tensor y(shape, x.dtype());
  const size_t bytes = static_cast<size_t>(row) * 4;
  for (size_t i = 0; i < index.size(); ++i) {
    if (x.dtype() == DType::f32) std::memcpy(y.data() + i * row, x.data() + index[i] * row, bytes);
    else std::memcpy(y.idata() + i * row, x.idata() + index[i] * row, bytes);
  }
  return y;
}

// In place: each row of logits [R, V] becomes log softmax.
void log_softmax_rows(Tensor& x) {
  const int64_t R = x.dim(0), V = x.dim(1);
  float* p = x.data();
#pragma omp parallel for schedule(static) if (R * V >= (1 << 16))
  for (int64_t r = 0; r < R; ++r) {
    float* row = p + r * V;
    const float mx = *std::max_element(row, row + V);
    double sum = 0.0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v] - mx));
    const float lse = mx + static_cast<float>(std::log(sum));
    for (int64_t v = 0; v < V; ++v) row[v] -= lse;
  }
}

}  // namespace

// The decoder run one step at a time over R rows.
struct Seq2SeqStepper {
  const Seq2Seq& m;
  Seq2SeqImpl::Encoded enc;
  Seq2SeqImpl::DecoderState st;
  Tensor gx, o, logp;   // [R, G], [R, Do], [R, V]

  Seq2SeqStepper(const Seq2Seq& model, Seq2SeqImpl::Encoded encoded) : m(model), enc(std::move(encoded)) {
    st = Seq2SeqImpl::initial_state(m, enc);
    const int64_t R = enc.s0.dim(0);
    gx = Tensor({R, m.decoder_.gates()});
    o = Tensor({R, m.config_.output_input_dim()});
    logp = Tensor({R, m.config_.tgt_vocab});
  }

  // ids: int32 [R] the step's input tokens. Returns the weights [R, S] (empty without
  // attention) and leaves log p(y_t | ...) in `logp`.
  Tensor step(int64_t t, const Tensor& ids) {
    const Seq2SeqConfig& c = m.config_;
    const int64_t R = ids.dim(0), E = c.embed_dim, Do = c.output_input_dim(), V = c.tgt_vocab;
    const Tensor e = m.tgt_embed_.forward(ids, nullptr);
    m.decoder_.project(e.data(), E, R, /*col=*/0, E, /*with_bias=*/true, 0.0f, gx.data());
    Tensor w = Seq2SeqImpl::decoder_step(m, t, gx.data(), e.data(), st, enc, o.data(),
                                         st.cs.defined() ? st.cs.data() : nullptr, nullptr);
    blas::gemm(Trans::N, Trans::T, R, V, Do, 1.0f, o.data(), Do, m.output_.W.value.data(), Do, 0.0f, logp.data(), V);
    const float* b = m.output_.b.value.data();
    for (int64_t r = 0; r < R; ++r)
      for (int64_t v = 0; v < V; ++v) logp.at(r * V + v) += b[v];
    data::forbid_unproducible(logp.data(), R, V);
    log_softmax_rows(logp);
    return w;
  }

  // Row r of every state becomes the old row parent[r].
  void reorder(const std::vector<int64_t>& parent) {
    st.s.h = gather_rows(st.s.h, parent);
    if (st.s.c.defined()) st.s.c = gather_rows(st.s.c, parent);
    if (st.feed.defined()) st.feed = gather_rows(st.feed, parent);
  }
};

namespace {

// Each sentence's encoding repeated for its K hypotheses: rows n*K .. n*K + K-1 are sentence n.
Seq2SeqImpl::Encoded repeat_rows(const Seq2SeqConfig& c, const nn::Attention* attention,
                                 const Seq2SeqImpl::Encoded& enc, int64_t K) {
  const int64_t N = enc.memory.dim(0);
  std::vector<int64_t> index(N * K);
  for (int64_t i = 0; i < N * K; ++i) index[i] = i / K;
  Seq2SeqImpl::Encoded out;
  out.memory = gather_rows(enc.memory, index);
  out.src_len = gather_rows(enc.src_len, index);
  out.s0 = gather_rows(enc.s0, index);
  Seq2SeqImpl::prepare_attention(c, attention, out);
  return out;
}

}  // namespace

Seq2SeqDecodeResult Seq2Seq::greedy(const Tensor& src, const Tensor& src_len,
                                    const Seq2SeqDecodeOptions& options) const {
  Seq2SeqImpl::check_source(*this, src, src_len, "seq2seq greedy");
  if (options.max_len < 1) throw ConfigError("seq2seq greedy: max_len must be >= 1, got " + std::to_string(options.max_len));
  const int64_t N = src.dim(0), S = src.dim(1), V = config_.tgt_vocab;
  Rng unused(0);
  Seq2SeqStepper stepper(*this, Seq2SeqImpl::encode(*this, src, src_len, false, unused, nullptr));
  Seq2SeqDecodeResult res;
  res.tokens.assign(N, {});
  res.scores.assign(N, 0.0f);
  std::vector<bool> done(N, false);
  std::vector<Tensor> weights;   // per step [N, S]
  Tensor ids = Tensor::from_ints({N}, std::vector<int32_t>(N, kBos));
  int64_t live = N;
  for (int64_t t = 0; t < options.max_len && live > 0; ++t) {
    weights.push_back(stepper.step(t, ids));
    for (int64_t n = 0; n < N; ++n) {
      if (done[n]) continue;
      const float* row = stepper.logp.data() + n * V;
      const int64_t best = std::max_element(row, row + V) - row;   // the first maximum
      res.scores[n] += row[best];
      ids.idata()[n] = static_cast<int32_t>(best);
      if (best == kEos) {
        done[n] = true;
        --live;
      } else {
        res.tokens[n].push_back(static_cast<int32_t>(best));
      }
    }
  }
  int64_t T = 0;
  for (const auto& tok : res.tokens) T = std::max<int64_t>(T, static_cast<int64_t>(tok.size()));
  res.alignment = Tensor({N, T, S});
  for (int64_t n = 0; n < N; ++n)
    for (size_t t = 0; t < res.tokens[n].size(); ++t)
      if (weights[t].defined() && !weights[t].empty())
        std::memcpy(res.alignment.data() + (n * T + static_cast<int64_t>(t)) * S, weights[t].data() + n * S,
                    static_cast<size_t>(S) * sizeof(float));
  return res;
}

Seq2SeqDecodeResult Seq2Seq::beam_search(const Tensor& src, const Tensor& src_len,
                                         const Seq2SeqDecodeOptions& options) const {
  Seq2SeqImpl::check_source(*this, src, src_len, "seq2seq beam search");
  if (options.max_len < 1)
    throw ConfigError("seq2seq beam search: max_len must be >= 1, got " + std::to_string(options.max_len));
  if (options.beam < 1) throw ConfigError("seq2seq beam search: beam must be >= 1, got " + std::to_string(options.beam));
  if (!(options.length_penalty >= 0.0f))
    throw ConfigError("seq2seq beam search: length_penalty must be >= 0, got " + std::to_string(options.length_penalty));
  const int64_t N = src.dim(0), S = src.dim(1), V = config_.tgt_vocab, K = options.beam, R = N * K;
  Rng unused(0);
  const Seq2SeqImpl::Encoded enc = Seq2SeqImpl::encode(*this, src, src_len, false, unused, nullptr);
  Seq2SeqStepper stepper(*this, K == 1 ? enc : repeat_rows(config_, attention_.get(), enc, K));

  // History: at step t row r was extended by token[t][r] from the old row parent[t][r]; the
  // weights of step t are weights[t] [R, S] indexed by the old row.
  std::vector<std::vector<int64_t>> parent;
  std::vector<std::vector<int32_t>> token;
  std::vector<Tensor> weights;
  struct Finished {
    float norm, raw;
    int64_t t, row;   // the hypothesis is row `row` before step t (tokens of steps < t)
  };
  std::vector<std::vector<Finished>> finished(N);
  std::vector<bool> done(N, false);
  std::vector<float> score(R, kNegInf);
  for (int64_t n = 0; n < N; ++n) score[n * K] = 0.0f;   // one live hypothesis to start
  Tensor ids = Tensor::from_ints({R}, std::vector<int32_t>(R, kBos));
  auto normalised = [&](float raw, int64_t length) {
    return raw / std::pow(static_cast<float>(std::max<int64_t>(length, 1)), options.length_penalty);
  };

  struct Cand {
    float s;
    int64_t index;   // k * V + v
  };
  std::vector<Cand> cands;
  int64_t steps = 0;
  for (int64_t t = 0; t < options.max_len; ++t) {
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    weights.push_back(stepper.step(t, ids));
    ++steps;
    std::vector<int64_t> par(R);
    std::vector<int32_t> tok(R, kPad);
    std::vector<float> next(R, kNegInf);
    for (int64_t n = 0; n < N; ++n) {
      if (done[n]) {
        for (int64_t k = 0; k < K; ++k) par[n * K + k] = n * K + k;
        continue;
      }
      cands.clear();
      for (int64_t k = 0; k < K; ++k) {
        const float sk = score[n * K + k];
        if (sk == kNegInf) continue;
        const float* row = stepper.logp.data() + (n * K + k) * V;
        for (int64_t v = 0; v < V; ++v)
          if (row[v] != kNegInf) cands.push_back({sk + row[v], k * V + v});   // PAD and BOS are -inf
      }
      const size_t take = std::min<size_t>(cands.size(), static_cast<size_t>(2 * K));
      auto better = [](const Cand& a, const Cand& b) { return a.s > b.s || (a.s == b.s && a.index < b.index); };
      std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(take), cands.end(), better);
      int64_t kept = 0;
      for (size_t i = 0; i < take && kept < K; ++i) {
        const int64_t k = cands[i].index / V, v = cands[i].index % V;
        if (v == kEos) {
          if (static_cast<int64_t>(finished[n].size()) < K)
            finished[n].push_back({normalised(cands[i].s, t + 1), cands[i].s, t, n * K + k});
          continue;
        }
        const int64_t r = n * K + kept++;
        par[r] = n * K + k;
        tok[r] = static_cast<int32_t>(v);
        next[r] = cands[i].s;
      }
      for (int64_t r = n * K + kept; r < (n + 1) * K; ++r) par[r] = n * K;   // unused rows
      if (static_cast<int64_t>(finished[n].size()) >= K) done[n] = true;
    }
    parent.push_back(par);
    token.push_back(tok);
    score = next;
    stepper.reorder(par);
    for (int64_t r = 0; r < R; ++r) ids.idata()[r] = tok[r] == kPad ? kEos : tok[r];
  }
  // Sentences cut at max_len: their live hypotheses end there, without EOS.
  for (int64_t n = 0; n < N; ++n) {
    if (done[n]) continue;
    for (int64_t k = 0; k < K; ++k)
      if (score[n * K + k] != kNegInf)
        finished[n].push_back({normalised(score[n * K + k], steps), score[n * K + k], steps, n * K + k});
  }

  Seq2SeqDecodeResult res;
  res.tokens.assign(N, {});
  res.scores.assign(N, 0.0f);
  std::vector<std::vector<const float*>> rows(N);   // the weights behind each token
  for (int64_t n = 0; n < N; ++n) {
    const Finished* best = nullptr;
    for (const Finished& f : finished[n])
      if (best == nullptr || f.norm > best->norm) best = &f;
    if (best == nullptr) continue;
    res.scores[n] = best->norm;
    int64_t r = best->row;
    for (int64_t t = best->t - 1; t >= 0; --t) {
      res.tokens[n].push_back(token[t][r]);
      r = parent[t][r];
      rows[n].push_back(weights[t].defined() && !weights[t].empty() ? weights[t].data() + r * S : nullptr);
    }
    std::reverse(res.tokens[n].begin(), res.tokens[n].end());
    std::reverse(rows[n].begin(), rows[n].end());
  }
  int64_t T = 0;
  for (const auto& tk : res.tokens) T = std::max<int64_t>(T, static_cast<int64_t>(tk.size()));
  res.alignment = Tensor({N, T, S});
  for (int64_t n = 0; n < N; ++n)
    for (size_t t = 0; t < rows[n].size(); ++t)
      if (rows[n][t] != nullptr)
        std::memcpy(res.alignment.data() + (n * T + static_cast<int64_t>(t)) * S, rows[n][t],
                    static_cast<size_t>(S) * sizeof(float));
  return res;
}

}  // namespace attn::models

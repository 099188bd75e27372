// Greedy search, beam search and sampling over a Transformer's incremental decoder: the rows
// being decoded (one per sentence or hypothesis) share one DecoderState; rows that finish or
// lose their place in the beam are dropped from it by DecoderState::select.
#include "attn/decode/decode.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

#include "attn/core/threading.hpp"
#include "attn/data/vocab.hpp"
#include "attn/ops/softmax.hpp"

namespace attn::decode {
namespace {

using models::kBos;
using models::kEos;
using models::kPad;
using models::Transformer;
using models::TransformerArch;

// The rows being decoded. Every row has been fed the same number of positions.
struct Rows {
  models::DecoderState state;
  std::vector<int64_t> sentence;              // the sentence each row belongs to
  std::vector<std::vector<int32_t>> fed;      // per row: BOS, then every token fed

  int64_t size() const { return static_cast<int64_t>(sentence.size()); }

  // Keeps rows `keep` (in that order; repeats allowed).
  void select(const std::vector<int64_t>& keep) {
    if (keep.size() == sentence.size() && std::is_sorted(keep.begin(), keep.end()) &&
        (keep.empty() || keep.back() == size() - 1))
      return;   // every row kept in place
    std::vector<int64_t> s;
    std::vector<std::vector<int32_t>> f;
    s.reserve(keep.size());
    f.reserve(keep.size());
    for (int64_t r : keep) {
      s.push_back(sentence[static_cast<size_t>(r)]);
      f.push_back(fed[static_cast<size_t>(r)]);
    }
    sentence = std::move(s);
    fed = std::move(f);
    if (!keep.empty()) state.select(keep);
  }
};

// Feeds next[r] to every row and returns the logits of the following token [R, V].
// Cached: one decoder step over the KV caches. Uncached: the whole prefix again (for tests).
Tensor next_logits(const Transformer& model, Rows& rows, const std::vector<int32_t>& next, bool use_cache) {
  const int64_t R = rows.size(), V = model.vocab_out();
  for (int64_t r = 0; r < R; ++r) rows.fed[static_cast<size_t>(r)].push_back(next[static_cast<size_t>(r)]);
  Tensor logits;
  if (use_cache) {
    logits = model.decode_step(Tensor::from_ints({R, 1}, next), rows.state).reshape({R, V});
  } else {
    const int64_t T = static_cast<int64_t>(rows.fed[0].size()), D = model.config().d_model;
    Tensor prefix({R, T}, DType::i32);
    for (int64_t r = 0; r < R; ++r)
      std::copy(rows.fed[static_cast<size_t>(r)].begin(), rows.fed[static_cast<size_t>(r)].end(),
                prefix.idata() + r * T);
    const Tensor h = model.decode_prefix(prefix, rows.state.memory, rows.state.src_len);   // [R, T, D]
    Tensor last({R, D});
    for (int64_t r = 0; r < R; ++r) std::copy_n(h.data() + (r * T + T - 1) * D, D, last.data() + r * D);
    logits = model.output_logits(last);
  }
  data::forbid_unproducible(logits.data(), R, V);
  return logits;
}

// The same as log-probabilities [R, V].
Tensor next_logprobs(const Transformer& model, Rows& rows, const std::vector<int32_t>& next, bool use_cache) {
  Tensor lp = next_logits(model, rows, next, use_cache);
  ops::log_softmax_rows_inplace(lp.data(), lp.dim(0), lp.dim(1));
  return lp;
}

// A token chosen from a row of logits, and its log-probability.
struct Choice {
  int32_t token = 0;
  float logprob = 0.0f;
};

// The greedy choice from logits x [V] without writing the log-softmax row out: the token is
// the first maximum of the log-probabilities (x_v - m) - log s, s = sum_v exp(x_v - m), with
// m and s computed as ops::log_softmax computes them, so the token and its log-probability are
// exactly what an argmax over that op's output gives (x_v within rounding of m tie with it).
Choice greedy_choice(const float* x, int64_t V) {
  // The maximum of each block of kBlock logits, then of the row; the first maximum is then
  // searched in the first block that can hold it, not along the whole row.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (V + kBlock - 1) / kBlock;
  std::vector<float> block_max(static_cast<size_t>(blocks));
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t b = 0; b < blocks; ++b) {
    float bm = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : bm)
    for (int64_t v = b * kBlock; v < std::min(V, (b + 1) * kBlock); ++v) bm = x[v] > bm ? x[v] : bm;
    block_max[static_cast<size_t>(b)] = bm;
    m = bm > m ? bm : m;
  }
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t v = 0; v < V; ++v) s += ops::exp_approx(x[v] - m);
  const float log_s = std::log(s);
  const float top = (m - m) - log_s;   // the largest log-probability
  auto is_top = [&](float xv) { return (xv - m) - log_s >= top; };
  int64_t b = 0;
  while (b + 1 < blocks && !is_top(block_max[static_cast<size_t>(b)])) ++b;   // bounded even for NaN rows
  int64_t v = b * kBlock;
  while (v + 1 < std::min(V, (b + 1) * kBlock) && !is_top(x[v])) ++v;
  return {static_cast<int32_t>(v), (x[v] - m) - log_s};
}

// Teacher-forced attention weights of the decoded sentences: the decoder re-run over each
// sentence's fed positions (padded to the longest), rows past a sentence's own zeroed.
void attention_of(const Transformer& model, const Tensor& memory, const Tensor& src_len,
                  const std::vector<std::vector<int32_t>>& fed, DecodeResult& out) {
  const int64_t N = static_cast<int64_t>(fed.size());
  int64_t T = 1;
  for (const auto& f : fed) T = std::max<int64_t>(T, static_cast<int64_t>(f.size()));
  Tensor prefix({N, T}, DType::i32);   // PAD-filled
  for (int64_t n = 0; n < N; ++n) std::copy(fed[n].begin(), fed[n].end(), prefix.idata() + n * T);
  model.decode_prefix(prefix, memory, src_len, &out.self_attention,
                      model.config().arch == TransformerArch::encdec ? &out.cross_attention : nullptr);
  for (std::vector<Tensor>* list : {&out.self_attention, &out.cross_attention})
    for (Tensor& w : *list) {
      if (w.empty()) continue;
      const int64_t H = w.dim(1), X = w.dim(3);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t t = static_cast<int64_t>(fed[n].size()); t < T; ++t)
            std::fill_n(w.data() + ((n * H + h) * T + t) * X, X, 0.0f);
    }
  if (model.config().arch != TransformerArch::encdec) out.cross_attention.clear();
}

void check_inputs(const Transformer& model, const Tensor& input, const Tensor& input_len, int64_t max_len,
                  const char* what) {
  if (model.config().arch == TransformerArch::mlm)
    throw ConfigError(std::string(what) + ": an mlm model has no decoder");
  check_tensor(input, {kAny, kAny}, std::string(what) + ": input [N, L]", DType::i32);
  check_tensor(input_len, {input.dim(0)}, std::string(what) + ": lengths [N]", DType::i32);
  for (int64_t n = 0; n < input.dim(0); ++n)
    if (input_len.idata()[n] < 0 || input_len.idata()[n] > input.dim(1))
      throw DataError(std::string(what) + ": length " + std::to_string(input_len.idata()[n]) + " of row " +
                      std::to_string(n) + " is outside [0, " + std::to_string(input.dim(1)) + "]");
  if (max_len < 1) throw ConfigError(std::string(what) + ": max_len must be >= 1, got " + std::to_string(max_len));
}

// Greedy search and sampling: one row per sentence, each step picks one token per row.
// `pick(logits, V)` chooses the next token from a row of logits (it may overwrite the row).
// With `pick_parallel` (a pick that draws nothing, i.e. greedy) every row is picked up front in
// one parallel loop; otherwise rows are picked in order, and only where a token is not forced,
// so that sampling draws the same random numbers at any thread count.
DecodeResult left_to_right(const Transformer& model, const Tensor& input, const Tensor& input_len,
                           int64_t max_len, bool use_cache, bool want_attention,
                           const std::function<Choice(float*, int64_t)>& pick, bool pick_parallel) {
  const models::TransformerConfig& cfg = model.config();
  const bool encdec = cfg.arch == TransformerArch::encdec;
  const int64_t N = input.dim(0), V = model.vocab_out();
  int64_t longest_prompt = 0;
  if (!encdec)
    for (int64_t n = 0; n < N; ++n) longest_prompt = std::max<int64_t>(longest_prompt, input_len.idata()[n]);
  if (longest_prompt + 1 > cfg.max_len)
    throw ShapeError("decode: a prompt of " + std::to_string(longest_prompt) + " tokens does not fit max_len " +
                     std::to_string(cfg.max_len) + " with BOS");
  // Positions fed: BOS, the prompt, and every generated token but the last.
  const int64_t capacity = std::min(cfg.max_len, longest_prompt + max_len);

  DecodeResult out;
  out.tokens.resize(static_cast<size_t>(N));
  out.scores.assign(static_cast<size_t>(N), 0.0f);
  if (N == 0) return out;
  Tensor memory, src_len;
  if (encdec) {
    memory = model.encode(input, input_len);
    src_len = input_len;
  }
  Rows rows;
  rows.state = model.start_decoding(memory, src_len, capacity, N);
  for (int64_t n = 0; n < N; ++n) rows.sentence.push_back(n);
  rows.fed.assign(static_cast<size_t>(N), {});
  std::vector<std::vector<int32_t>> final_fed(static_cast<size_t>(N));

  std::vector<int32_t> next(static_cast<size_t>(N), kBos);
  while (rows.size() > 0) {
    Tensor logits = next_logits(model, rows, next, use_cache);
    const int64_t R = rows.size();
    std::vector<Choice> picked(pick_parallel ? static_cast<size_t>(R) : 0);
    if (pick_parallel) {
#pragma omp parallel for schedule(static) if (R * V >= kParallelMinElements)
      for (int64_t r = 0; r < R; ++r) picked[static_cast<size_t>(r)] = pick(logits.data() + r * V, V);
    }
    std::vector<int64_t> keep;
    std::vector<int32_t> following;
    for (int64_t r = 0; r < rows.size(); ++r) {
      const size_t s = static_cast<size_t>(rows.sentence[static_cast<size_t>(r)]);
      const std::vector<int32_t>& fed = rows.fed[static_cast<size_t>(r)];
      const int64_t prompt_pos = static_cast<int64_t>(fed.size()) - 1;   // prompt tokens fed so far
      int32_t tok;
      bool done = false;
      if (!encdec && prompt_pos < input_len.idata()[s]) {
        tok = input.idata()[static_cast<int64_t>(s) * input.dim(1) + prompt_pos];   // forced
      } else {
        const Choice c = pick_parallel ? picked[static_cast<size_t>(r)] : pick(logits.data() + r * V, V);
        tok = c.token;
        out.scores[s] += c.logprob;
        if (tok == kEos) {
          done = true;
        } else {
          out.tokens[s].push_back(tok);
          done = static_cast<int64_t>(out.tokens[s].size()) == max_len;
        }
      }
      if (!done && static_cast<int64_t>(fed.size()) == capacity) done = true;   // no position left
      if (done) {
        final_fed[s] = fed;
      } else {
        keep.push_back(r);
        following.push_back(tok);
      }
    }
    rows.select(keep);
    next = std::move(following);
  }
  if (want_attention) attention_of(model, memory, src_len, final_fed, out);
  return out;
}


}  // namespace

DecodeResult greedy(const Transformer& model, const Tensor& src, const Tensor& src_len, const DecodeOptions& o) {
  check_inputs(model, src, src_len, o.max_len, "greedy");
  return left_to_right(model, src, src_len, o.max_len, o.use_cache, o.want_attention, greedy_choice,
                       /*pick_parallel=*/true);
}

DecodeResult sample(const Transformer& model, const Tensor& prompt, const Tensor& prompt_len,
                    const SampleOptions& o, Rng& rng) {
  check_inputs(model, prompt, prompt_len, o.max_len, "sample");
  if (!(o.temperature >= 0.0f))
    throw ConfigError("sample: temperature must be >= 0, got " + std::to_string(o.temperature));
  if (o.top_k < 0) throw ConfigError("sample: top_k must be >= 0, got " + std::to_string(o.top_k));
  if (o.temperature == 0.0f)
    return left_to_right(model, prompt, prompt_len, o.max_len, o.use_cache, false, greedy_choice,
                         /*pick_parallel=*/true);
  std::vector<float> scratch;
  auto draw_token = [&](const float* lp, int64_t V) -> int32_t {
    // p_v ~ exp(lp_v / temperature) over the top k (ties at the k-th value included).
    float threshold = -std::numeric_limits<float>::infinity();
    if (o.top_k > 0 && o.top_k < V) {
      scratch.assign(lp, lp + V);
      std::nth_element(scratch.begin(), scratch.begin() + (o.top_k - 1), scratch.end(), std::greater<float>());
      threshold = scratch[static_cast<size_t>(o.top_k - 1)];
    }
    const float top = *std::max_element(lp, lp + V);
    double total = 0;
    for (int64_t v = 0; v < V; ++v)
      if (lp[v] >= threshold) total += std::exp((lp[v] - top) / o.temperature);
    double u = rng.uniform() * total;
    int32_t last = 0;
    for (int64_t v = 0; v < V; ++v) {
      if (lp[v] < threshold) continue;
      last = static_cast<int32_t>(v);
      u -= std::exp((lp[v] - top) / o.temperature);
      if (u < 0) return last;
    }
    return last;   // rounding left u a hair above 0: the last eligible token
  };
  auto draw = [&](float* logits, int64_t V) -> Choice {
    ops::log_softmax_rows_inplace(logits, 1, V);
    const int32_t tok = draw_token(logits, V);
    return {tok, logits[tok]};
  };
  return left_to_right(model, prompt, prompt_len, o.max_len, o.use_cache, false, draw, /*pick_parallel=*/false);
}

DecodeResult beam_search(const Transformer& model, const Tensor& src, const Tensor& src_len,
                         const DecodeOptions& o) {
  check_inputs(model, src, src_len, o.max_len, "beam search");
  if (model.config().arch != TransformerArch::encdec)
    throw ConfigError("beam search: needs an encdec model (use greedy or sample for an lm)");
  if (o.beam < 1) throw ConfigError("beam search: beam must be >= 1, got " + std::to_string(o.beam));
  if (!(o.length_penalty >= 0.0f))
    throw ConfigError("beam search: length_penalty must be >= 0, got " + std::to_string(o.length_penalty));
  const int64_t N = src.dim(0), V = model.vocab_out(), K = o.beam;
  const int64_t capacity = std::min(model.config().max_len, o.max_len);
  auto penalty = [&](size_t len) {
    return std::pow((5.0 + static_cast<double>(len)) / 6.0, static_cast<double>(o.length_penalty));
  };

  DecodeResult out;
  out.tokens.resize(static_cast<size_t>(N));
  out.scores.assign(static_cast<size_t>(N), 0.0f);
  if (N == 0) return out;
  const Tensor memory = model.encode(src, src_len);
  Rows rows;
  rows.state = model.start_decoding(memory, src_len, capacity);
  for (int64_t n = 0; n < N; ++n) rows.sentence.push_back(n);
  rows.fed.assign(static_cast<size_t>(N), {});
  std::vector<double> score(static_cast<size_t>(N), 0.0);    // per row: summed log-probability
  std::vector<std::vector<int32_t>> tokens(static_cast<size_t>(N));

  struct Final {
    double score;   // normalised
    std::vector<int32_t> tokens, fed;
  };
  std::vector<std::vector<Final>> finals(static_cast<size_t>(N));
  struct Candidate {
    double score;
    int64_t row;
    int32_t token;
    bool operator>(const Candidate& o) const { return score > o.score; }
  };

  std::vector<int32_t> next(static_cast<size_t>(N), kBos);
  while (rows.size() > 0) {
    const Tensor lp = next_logprobs(model, rows, next, o.use_cache);
    std::vector<int64_t> parents;
    std::vector<int32_t> following;
    std::vector<double> following_score;
    // The rows of one sentence are contiguous; walk them sentence by sentence.
    for (int64_t r0 = 0; r0 < rows.size();) {
      const int64_t s = rows.sentence[static_cast<size_t>(r0)];
      int64_t r1 = r0;
      while (r1 < rows.size() && rows.sentence[static_cast<size_t>(r1)] == s) ++r1;
      // The best 2K continuations (K of them may end with EOS and still leave K alive).
      const size_t M = static_cast<size_t>(std::min(2 * K, (r1 - r0) * V));
      std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
      for (int64_t r = r0; r < r1; ++r) {
        const float* row = lp.data() + r * V;
        const double base = score[static_cast<size_t>(r)];
        for (int64_t v = 0; v < V; ++v) {
          if (row[v] == -std::numeric_limits<float>::infinity()) continue;   // PAD and BOS
          const double c = base + row[v];
          if (heap.size() < M) {
            heap.push({c, r, static_cast<int32_t>(v)});
          } else if (c > heap.top().score) {
            heap.pop();
            heap.push({c, r, static_cast<int32_t>(v)});
          }
        }
      }
      std::vector<Candidate> best;
      while (!heap.empty()) {
        best.push_back(heap.top());
        heap.pop();
      }
      std::reverse(best.begin(), best.end());   // best first

      std::vector<Final>& fin = finals[static_cast<size_t>(s)];
      std::vector<Candidate> alive;
      for (size_t rank = 0; rank < best.size() && static_cast<int64_t>(alive.size()) < K; ++rank) {
        const Candidate& c = best[rank];
        const std::vector<int32_t>& prev = tokens[static_cast<size_t>(c.row)];
        const std::vector<int32_t>& fed = rows.fed[static_cast<size_t>(c.row)];
        if (c.token == kEos) {
          if (static_cast<int64_t>(rank) < K) fin.push_back({c.score / penalty(prev.size() + 1), prev, fed});
          continue;
        }
        if (static_cast<int64_t>(prev.size()) + 1 == o.max_len || static_cast<int64_t>(fed.size()) == capacity) {
          std::vector<int32_t> t = prev;   // out of room: the hypothesis ends here, without EOS
          t.push_back(c.token);
          fin.push_back({c.score / penalty(t.size()), std::move(t), fed});
          continue;
        }
        alive.push_back(c);
      }
      if (static_cast<int64_t>(fin.size()) < K)
        for (const Candidate& c : alive) {
          parents.push_back(c.row);
          following.push_back(c.token);
          following_score.push_back(c.score);
        }
      r0 = r1;
    }
    // Rebuild the rows from their parents, then extend each by its token.
    std::vector<std::vector<int32_t>> new_tokens;
    new_tokens.reserve(parents.size());
    for (size_t i = 0; i < parents.size(); ++i) {
      new_tokens.push_back(tokens[static_cast<size_t>(parents[i])]);
      new_tokens.back().push_back(following[i]);
    }
    rows.select(parents);
    tokens = std::move(new_tokens);
    score = std::move(following_score);
    next = std::move(following);
  }

  std::vector<std::vector<int32_t>> final_fed(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    const std::vector<Final>& fin = finals[static_cast<size_t>(n)];
    if (fin.empty()) continue;   // cannot happen: every sentence ends with >= 1 hypothesis
    const auto best = std::max_element(fin.begin(), fin.end(),
                                       [](const Final& a, const Final& b) { return a.score < b.score; });
    out.tokens[static_cast<size_t>(n)] = best->tokens;
    out.scores[static_cast<size_t>(n)] = static_cast<float>(best->score);
    final_fed[static_cast<size_t>(n)] = best->fed;
  }
  if (o.want_attention) attention_of(model, memory, src_len, final_fed, out);
  return out;
}

}  // namespace attn::decode

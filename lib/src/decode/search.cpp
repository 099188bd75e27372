// The searches of decode/search.hpp over a Stepper: greedy search and sampling (one row per
// sentence, one token chosen per row and step) and beam search (BW rows per sentence, the
// history of every hypothesis kept as parent links, traced back once at the end).
#include "attn/decode/search.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <utility>

#include "attn/core/error.hpp"
#include "attn/core/threading.hpp"
#include "attn/data/vocab.hpp"
#include "attn/ops/softmax.hpp"

namespace attn::decode {
namespace {

using data::kBos;
using data::kEos;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// ---- the model's next-token distribution ---------------------------------------------------

// Feeds `fed` and returns the next-token logits [B, V] with PAD and BOS at -inf: the one place
// every search forbids them.
Tensor next_logits(Stepper& model, const std::vector<int32_t>& fed) {
  const int64_t R = static_cast<int64_t>(fed.size()), V = model.vocab();
  Tensor logits = model.step(fed);
  check_tensor(logits, {R, V}, "decode: the model's next-token logits [R, V]");
  data::forbid_unproducible(logits.data(), R, V);
  return logits;
}

// x <- log_softmax(x) for one row, with the exponentials summed in double (LogSoftmax::double_sum).
void log_softmax_row_double(float* x, int64_t V) {
  const float mx = *std::max_element(x, x + V);
  double sum = 0.0;
  for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(x[v] - mx));
  const float lse = mx + static_cast<float>(std::log(sum));
  for (int64_t v = 0; v < V; ++v) x[v] -= lse;
}

// x [B, V] <- log_softmax(x) row by row, the model's way.
void log_softmax_rows(float* x, int64_t R, int64_t V, LogSoftmax kind) {
  if (kind == LogSoftmax::vectorised) {
    ops::log_softmax_rows_inplace(x, R, V);
    return;
  }
#pragma omp parallel for schedule(static) if (R * V >= (1 << 16))
  for (int64_t r = 0; r < R; ++r) log_softmax_row_double(x + r * V, V);
}

// A token chosen from a row, and its log-probability.
struct Choice {
  int32_t token = 0;
  float logprob = 0.0f;
};
// Chooses from a row of logits [V] (PAD and BOS already -inf); may overwrite the row.
using Pick = std::function<Choice(float* logits, int64_t V)>;

// The greedy choice from logits x [V] without writing the log-softmax row out: the token is
// the first maximum of the log-probabilities (x_v - m) - log s, s = sum_v exp(x_v - m), with
// m and s computed as ops::log_softmax computes them, so the token and its log-probability are
// exactly what an argmax over that op's output gives (x_v within rounding of m tie with it).
Choice greedy_choice_vectorised(const float* x, int64_t V) {
  // The maximum of each block of kBlock logits, then of the row; the first maximum is then
  // searched in the first block that can hold it, not along the whole row.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (V + kBlock - 1) / kBlock;
  std::vector<float> block_max(static_cast<size_t>(blocks));
  float m = kNegInf;
  for (int64_t b = 0; b < blocks; ++b) {
    float bm = kNegInf;
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

Pick greedy_pick(LogSoftmax kind) {
  if (kind == LogSoftmax::vectorised) return [](float* x, int64_t V) { return greedy_choice_vectorised(x, V); };
  return [](float* x, int64_t V) -> Choice {
    log_softmax_row_double(x, V);
    const int64_t best = std::max_element(x, x + V) - x;   // the first maximum
    return {static_cast<int32_t>(best), x[best]};
  };
}

// ---- rows and attention ---------------------------------------------------------------------

// Makes row i the old row keep[i]: `sentence` here, the model through Stepper::keep (unless
// every row stays in place, or none is left).
void keep_rows(Stepper& model, std::vector<int64_t>& sentence, const std::vector<int64_t>& keep) {
  const size_t R = sentence.size();
  bool in_place = keep.size() == R;
  for (size_t i = 0; in_place && i < R; ++i) in_place = keep[i] == static_cast<int64_t>(i);
  if (in_place) return;
  std::vector<int64_t> s(keep.size());
  for (size_t i = 0; i < keep.size(); ++i) s[i] = sentence[static_cast<size_t>(keep[i])];
  sentence = std::move(s);
  if (!keep.empty()) model.keep(keep);
}

// The model's attention of every step, and per sentence where the weights behind each of its
// tokens are: (step, row of that step).
struct AttentionLog {
  bool on = false;
  std::vector<Tensor> steps;   // [B_t, S] per step t (B_t: that step's rows)
  std::vector<std::vector<std::pair<int64_t, int64_t>>> behind;

  AttentionLog(bool want, int64_t N) : on(want), behind(want ? static_cast<size_t>(N) : 0) {}
  void record_step(const Stepper& model) {
    if (on) steps.push_back(model.attention());
  }
  void record_token(int64_t sentence, int64_t step, int64_t row) {
    if (on) behind[static_cast<size_t>(sentence)].emplace_back(step, row);
  }
  // [N, T, S] (T: the most tokens of a sentence), zeros where no token is; undefined when off
  // or when the model gives no attention.
  Tensor assemble() const {
    int64_t A = -1;
    for (const Tensor& w : steps)
      if (w.defined() && !w.empty()) {
        A = w.dim(1);
        break;
      }
    if (A < 0) return {};
    const int64_t N = static_cast<int64_t>(behind.size());
    int64_t T = 0;
    for (const auto& b : behind) T = std::max<int64_t>(T, static_cast<int64_t>(b.size()));
    Tensor out({N, T, A});
    for (int64_t n = 0; n < N; ++n)
      for (size_t t = 0; t < behind[static_cast<size_t>(n)].size(); ++t) {
        const auto [step, row] = behind[static_cast<size_t>(n)][t];
        const Tensor& w = steps[static_cast<size_t>(step)];
        if (w.defined() && !w.empty())
          std::memcpy(out.data() + (n * T + static_cast<int64_t>(t)) * A, w.data() + row * A,
                      static_cast<size_t>(A) * sizeof(float));
      }
    return out;
  }
};

SearchResult empty_result(int64_t N) {
  SearchResult out;
  out.tokens.resize(static_cast<size_t>(N));
  out.scores.assign(static_cast<size_t>(N), 0.0f);
  out.ended.assign(static_cast<size_t>(N), 0);
  return out;
}

void check_prompts(const Prompts& p, int64_t N) {
  if (!p.lengths.defined()) return;
  check_tensor(p.tokens, {N, kAny}, "decode: prompts [N, P]", DType::i32);
  check_tensor(p.lengths, {N}, "decode: prompt lengths [N]", DType::i32);
}

// ---- greedy search and sampling -------------------------------------------------------------

// One row per sentence; each step `pick` chooses every row's token, except where a prompt
// token is forced. With `pick_parallel` (a pick that draws nothing, i.e. greedy) every row is
// picked up front in one parallel loop; otherwise rows are picked in order, and only where a
// token is not forced, so that sampling draws the same random numbers at any thread count.
SearchResult left_to_right(Stepper& model, int64_t N, const SearchOptions& o, const Prompts& prompts,
                           const Pick& pick, bool pick_parallel) {
  check_prompts(prompts, N);
  const int64_t V = model.vocab(), capacity = model.capacity();
  SearchResult out = empty_result(N);
  if (N == 0) return out;
  AttentionLog log(o.want_attention, N);
  std::vector<int64_t> sentence(static_cast<size_t>(N));
  std::iota(sentence.begin(), sentence.end(), int64_t{0});
  std::vector<int32_t> fed(static_cast<size_t>(N), kBos);
  std::vector<Choice> picked;
  for (int64_t t = 0; !sentence.empty(); ++t) {   // every row was fed t positions before this step
    Tensor logits = next_logits(model, fed);
    log.record_step(model);
    const int64_t R = static_cast<int64_t>(sentence.size());
    if (pick_parallel) {
      picked.resize(static_cast<size_t>(R));
#pragma omp parallel for schedule(static) if (R * V >= kParallelMinElements)
      for (int64_t r = 0; r < R; ++r) picked[static_cast<size_t>(r)] = pick(logits.data() + r * V, V);
    }
    std::vector<int64_t> keep;
    std::vector<int32_t> following;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t s = sentence[static_cast<size_t>(r)];
      std::vector<int32_t>& tokens = out.tokens[static_cast<size_t>(s)];
      int32_t tok;
      bool done = false;
      if (prompts.lengths.defined() && t < prompts.lengths.idata()[s]) {
        tok = prompts.tokens.idata()[s * prompts.tokens.dim(1) + t];   // forced
      } else {
        const Choice c = pick_parallel ? picked[static_cast<size_t>(r)] : pick(logits.data() + r * V, V);
        tok = c.token;
        out.scores[static_cast<size_t>(s)] += c.logprob;
        if (tok == kEos) {
          done = true;
          out.ended[static_cast<size_t>(s)] = 1;
        } else {
          tokens.push_back(tok);
          log.record_token(s, t, r);
          done = static_cast<int64_t>(tokens.size()) == o.max_len;
        }
      }
      if (!done && t + 1 >= capacity) done = true;   // no position left to feed `tok`
      if (!done) {
        keep.push_back(r);
        following.push_back(tok);
      }
    }
    keep_rows(model, sentence, keep);
    fed = std::move(following);
  }
  out.attention = log.assemble();
  return out;
}

// ---- beam search ----------------------------------------------------------------------------

// A one-token extension of row `row`: its summed log-probability.
struct Candidate {
  double score;
  int64_t row;
  int32_t token;
};
// The candidates' order: higher score first, ties by (row, token), so BW = 1 picks exactly
// greedy's first maximum.
bool better(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  return a.row != b.row ? a.row < b.row : a.token < b.token;
}

// The best `M` extensions of rows [r0, r1) of log-probabilities lp [B, V], best first, into
// `best`. Tokens at -inf (PAD, BOS) or NaN are never candidates.
void best_candidates(const Tensor& lp, const std::vector<double>& score, int64_t r0, int64_t r1, size_t M,
                     std::vector<Candidate>& best) {
  const int64_t V = lp.dim(1);
  best.clear();   // a heap with the worst candidate on top
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = lp.data() + r * V;
    const double base = score[static_cast<size_t>(r)];
    for (int64_t v = 0; v < V; ++v) {
      if (!(row[v] > kNegInf)) continue;
      const Candidate c{base + row[v], r, static_cast<int32_t>(v)};
      if (best.size() == M) {
        if (c.score < best.front().score || !better(c, best.front())) continue;
        std::pop_heap(best.begin(), best.end(), better);
        best.back() = c;
      } else {
        best.push_back(c);
      }
      std::push_heap(best.begin(), best.end(), better);
    }
  }
  std::sort_heap(best.begin(), best.end(), better);   // best first
}

}  // namespace

void check_search_options(const SearchOptions& o, const std::string& what) {
  if (o.max_len < 1) throw ConfigError(what + ": max_len must be >= 1, got " + std::to_string(o.max_len));
  if (o.beam < 1) throw ConfigError(what + ": beam must be >= 1, got " + std::to_string(o.beam));
  if (!(o.length_penalty.alpha >= 0.0f))
    throw ConfigError(what + ": length_penalty must be >= 0, got " + std::to_string(o.length_penalty.alpha));
}

double LengthPenalty::operator()(int64_t length) const {
  const double a = static_cast<double>(alpha);
  if (kind == PenaltyKind::gnmt) return std::pow((5.0 + static_cast<double>(length)) / 6.0, a);
  return std::pow(static_cast<double>(std::max<int64_t>(length, 1)), a);
}

SearchResult greedy_search(Stepper& model, int64_t N, const SearchOptions& options, const Prompts& prompts) {
  check_search_options(options, "greedy search");
  return left_to_right(model, N, options, prompts, greedy_pick(model.log_softmax()), /*pick_parallel=*/true);
}

SearchResult sample_search(Stepper& model, int64_t N, const SearchOptions& options, const Sampling& sampling,
                           Rng& rng, const Prompts& prompts) {
  check_search_options(options, "sample");
  if (!(sampling.temperature > 0.0f))
    throw ConfigError("sample: temperature must be > 0, got " + std::to_string(sampling.temperature));
  if (sampling.top_k < 0) throw ConfigError("sample: top_k must be >= 0, got " + std::to_string(sampling.top_k));
  const LogSoftmax kind = model.log_softmax();
  std::vector<float> scratch;
  auto draw_token = [&](const float* lp, int64_t V) -> int32_t {
    // p_v ~ exp(lp_v / temperature) over the top k (ties at the k-th value included).
    float threshold = kNegInf;
    if (sampling.top_k > 0 && sampling.top_k < V) {
      scratch.assign(lp, lp + V);
      std::nth_element(scratch.begin(), scratch.begin() + (sampling.top_k - 1), scratch.end(), std::greater<float>());
      threshold = scratch[static_cast<size_t>(sampling.top_k - 1)];
    }
    const float top = *std::max_element(lp, lp + V);
    double total = 0;
    for (int64_t v = 0; v < V; ++v)
      if (lp[v] >= threshold) total += std::exp((lp[v] - top) / sampling.temperature);
    double u = rng.uniform() * total;
    int32_t last = 0;
    for (int64_t v = 0; v < V; ++v) {
      if (lp[v] < threshold) continue;
      last = static_cast<int32_t>(v);
      u -= std::exp((lp[v] - top) / sampling.temperature);
      if (u < 0) return last;
    }
    return last;   // rounding left u a hair above 0: the last eligible token
  };
  auto draw = [&](float* logits, int64_t V) -> Choice {
    log_softmax_rows(logits, 1, V, kind);
    const int32_t tok = draw_token(logits, V);
    return {tok, logits[tok]};
  };
  return left_to_right(model, N, options, prompts, draw, /*pick_parallel=*/false);
}

SearchResult beam_search(Stepper& model, int64_t N, const SearchOptions& o) {
  check_search_options(o, "beam search");
  const int64_t V = model.vocab(), K = o.beam, capacity = model.capacity();
  SearchResult out = empty_result(N);
  if (N == 0) return out;
  AttentionLog log(o.want_attention, N);

  // The rows of step t, each a hypothesis of t tokens; the rows of one sentence are contiguous.
  std::vector<int64_t> sentence(static_cast<size_t>(N));
  std::iota(sentence.begin(), sentence.end(), int64_t{0});
  std::vector<double> score(static_cast<size_t>(N), 0.0);   // per row: summed log-probability
  std::vector<int32_t> fed(static_cast<size_t>(N), kBos);
  // links[t]: row i of step t + 1 is row parent[i] of step t extended by token[i].
  struct Links {
    std::vector<int64_t> parent;
    std::vector<int32_t> token;
  };
  std::vector<Links> links;
  // A finished hypothesis: row `row` of step `step`, plus `cut` when it ended without EOS.
  struct Finished {
    double score;   // normalised
    int64_t step, row;
    int32_t cut;    // the token that filled it up, or -1 (it ended with EOS)
  };
  std::vector<std::vector<Finished>> finished(static_cast<size_t>(N));
  std::vector<Candidate> best;

  for (int64_t t = 0; !sentence.empty(); ++t) {
    Tensor lp = next_logits(model, fed);
    log_softmax_rows(lp.data(), lp.dim(0), V, model.log_softmax());
    log.record_step(model);
    const int64_t R = static_cast<int64_t>(sentence.size());
    // A hypothesis extended now has t + 1 tokens; it can go on only if it may have more and the
    // model has a position to feed its last token.
    const bool no_room = t + 1 >= o.max_len || t + 1 >= capacity;
    const double lp_len = o.length_penalty(t + 1);   // |Y| = t + 1 for EOS and cut alike
    Links next;
    std::vector<double> next_score;
    for (int64_t r0 = 0; r0 < R;) {
      const int64_t s = sentence[static_cast<size_t>(r0)];
      int64_t r1 = r0;
      while (r1 < R && sentence[static_cast<size_t>(r1)] == s) ++r1;
      // The best 2 BW (BW of them may end and still leave BW alive).
      best_candidates(lp, score, r0, r1, static_cast<size_t>(2 * K), best);
      std::vector<Finished>& fin = finished[static_cast<size_t>(s)];
      const size_t first = next.parent.size();
      int64_t alive = 0;
      for (size_t rank = 0; rank < best.size() && alive < K; ++rank) {
        const Candidate& c = best[rank];
        if (c.token == kEos || no_room) {
          if (static_cast<int64_t>(rank) < K) fin.push_back({c.score / lp_len, t, c.row, c.token == kEos ? -1 : c.token});
          continue;
        }
        next.parent.push_back(c.row);
        next.token.push_back(c.token);
        next_score.push_back(c.score);
        ++alive;
      }
      if (static_cast<int64_t>(fin.size()) >= K) {   // done: its live hypotheses leave
        next.parent.resize(first);
        next.token.resize(first);
        next_score.resize(first);
      }
      r0 = r1;
    }
    keep_rows(model, sentence, next.parent);
    score = std::move(next_score);
    fed = next.token;
    links.push_back(std::move(next));
  }

  for (int64_t n = 0; n < N; ++n) {
    const std::vector<Finished>& fin = finished[static_cast<size_t>(n)];
    if (fin.empty()) continue;   // only if no token could be produced at all
    const Finished* f = &fin[0];
    for (const Finished& g : fin)
      if (g.score > f->score) f = &g;
    std::vector<int32_t>& tokens = out.tokens[static_cast<size_t>(n)];
    std::vector<std::pair<int64_t, int64_t>> behind;   // (step, row), last token first
    if (f->cut >= 0) {
      tokens.push_back(f->cut);
      behind.emplace_back(f->step, f->row);
    }
    int64_t r = f->row;
    for (int64_t step = f->step - 1; step >= 0; --step) {
      const Links& l = links[static_cast<size_t>(step)];
      tokens.push_back(l.token[static_cast<size_t>(r)]);
      r = l.parent[static_cast<size_t>(r)];
      behind.emplace_back(step, r);
    }
    std::reverse(tokens.begin(), tokens.end());
    for (auto it = behind.rbegin(); it != behind.rend(); ++it) log.record_token(n, it->first, it->second);
    out.scores[static_cast<size_t>(n)] = static_cast<float>(f->score);
    out.ended[static_cast<size_t>(n)] = f->cut < 0 ? 1 : 0;
  }
  out.attention = log.assemble();
  return out;
}

}  // namespace attn::decode

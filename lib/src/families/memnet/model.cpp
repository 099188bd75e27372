// memnet::MemN2N: construction, the forward over a batch of questions, the loss, and the
// backward (the forward's steps in reverse order). The configuration is in memnet_config.cpp.
//
// Buffers (allocated once per call; S = memory_tables(), K = Nhop; only the window's slots of
// Mem and dMem are written and read):
//   story_bags, question_bags  the embedding bags and their options: a window slot's word
//                          count J (-1 outside the window) and temporal index [B, Ms], the
//                          question's words [B], the position encoding
//   Mem    [S, B, Ms, E]   sentence embeddings of every memory table, temporal row added (one
//                          embedding bag per slot over the S tables, ops/embedding_bag.hpp):
//                          table in(k) gives hop k's m, table out(k) its c (0-based hop k:
//                          adjacent in = k, out = k + 1; layerwise in = 0 (A), out = 1 (C))
//   U      [K + 1, B, E]   u^1 .. u^{K+1}: block k is the state hop k reads (block 0 the question)
//   P      [B, K, Ms]      every hop's p (0 outside the window): answer()'s attention as it is
//   logits [B, V]          the answer logits; a training step writes dlogits over them
// Backward: dU [K + 1, B, E] (the gradient w.r.t. each u), dMem [S, B, Ms, E], dP [B, Ms].
#include "attn/families/memnet/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include <omp.h>

#include "attn/blas/blas.hpp"
#include "attn/core/flops.hpp"
#include "attn/core/row_blocks.hpp"
#include "attn/core/threading.hpp"
#include "attn/ops/embedding_bag.hpp"
#include "attn/ops/softmax.hpp"

namespace attn::memnet {
namespace {

using blas::Trans;

struct Dims {
  int64_t B = 0, Ms = 0, Ws = 0, Wq = 0;   // the batch
  int64_t V = 0, E = 0, K = 0, S = 0, Mm = 0;
  bool position = false, temporal = false, adjacent = true;
};

// The 10% of random noise as a whole percentage, so that ceil(n' / 10) is integer arithmetic.
constexpr int64_t kNoisePercent = 10;
static_assert(kNoisePercent == static_cast<int64_t>(kMemN2NRandomNoise * 100.0f + 0.5f));

}  // namespace

struct MemN2NImpl {
  struct Run {
    Dims d;
    bool linear_start = false;
    std::vector<int32_t> n, w0;   // [B] story_len and the window's first slot
    // The embedding bags (ops/embedding_bag.hpp), their options written by prepare: the
    // sentences' lengths [B, Ms] int32 (J of a window slot's sentence, -1 outside the window: an
    // absent bag) and start ids (the slots' temporal indices, temporal encoding only), the
    // question's lengths [B]; both with the position encoding [Wmax + 1, Wmax, E] (l of J-word
    // sentences at row J; Wmax = max(Ws, Wq); none with bow encoding). The forward fills the
    // rest of each cache.
    ops::EmbeddingBagCache story_bags, question_bags;
    std::vector<int64_t> cost;   // [B] a row's share of the hops' work, for the row blocks
    int64_t bag_work = 0;        // multiply-adds of the sentence and question embeddings
    Tensor Mem, U, P, logits;
  };

  static Dims dims(const MemN2N& m, const QaBatch& batch);
  static void prepare(const MemN2N& m, const QaBatch& batch, Rng* noise, Run& run);
  // Keeps in run what backward needs.
  static void forward(const MemN2N& m, const QaBatch& batch, Run& run);
  static void forward_row(const MemN2N& m, Run& run, int64_t b);
  // Cross-entropy of the answers: the sums, the predictions (when asked) and, when asked,
  // dlogits of the mean over the batch written over run.logits.
  static MemN2NStats loss(Run& run, const QaBatch& batch, int32_t* predictions, bool backward);
  static void backward(MemN2N& m, Run& run);
  static void backward_row(const MemN2N& m, Run& run, Tensor& dU, Tensor& dMem, Tensor& dP, int64_t b);

  // The tables of the tying (see memnet.hpp).
  static int64_t in_table(const Dims& d, int64_t k) { return d.adjacent ? k : 0; }
  static int64_t out_table(const Dims& d, int64_t k) { return d.adjacent ? k + 1 : 1; }
  static const Param& question_table(const MemN2N& m) {
    return m.config_.tying == MemN2NTying::adjacent ? m.memory_.front() : m.question_;
  }
  static Param& question_table(MemN2N& m) {
    return m.config_.tying == MemN2NTying::adjacent ? m.memory_.front() : m.question_;
  }
  static const Param& answer_table(const MemN2N& m) {
    return m.config_.tying == MemN2NTying::adjacent ? m.memory_.back() : m.output_;
  }
  static Param& answer_table(MemN2N& m) {
    return m.config_.tying == MemN2NTying::adjacent ? m.memory_.back() : m.output_;
  }
};

namespace {

using Impl = MemN2NImpl;

// Words before the first PAD (0) of a row of `width` ids.
inline int32_t word_count(const int32_t* words, int64_t width) {
  int32_t J = 0;
  while (J < width && words[J] != 0) ++J;
  return J;
}

// Work (multiply-adds: the sentence embeddings' and the hops') below which a parallel region
// stays on the calling thread: the embedding bags' own threshold, one value for such rows. A region of the forward, the
// hops' backward or the tables' gradients is cheap per unit of work, so waking and joining the second thread, and more
// still its cache misses on rows the first wrote, outweigh the half of a small region it takes over. Measured training
// on the joint set (when these regions still embedded the sentences): from 2^22 two threads gain; below it they lose,
// so every bAbI batch up to about 300 questions runs on one thread (experiments/perf/memnet, "Threads: why 2 were
// slower than 1, and the fix").
constexpr int64_t kParallelMinWork = ops::kEmbeddingBagParallelMinWork;

// The threads a loop over `work` multiply-adds gets: one inside a parallel region or below
// kParallelMinWork, else all of them.
int threads_for(int64_t work) {
  if (in_parallel_region() || work < kParallelMinWork) return 1;
  return num_parts();
}

std::string id_range(int64_t V) { return " is outside [0, V = " + std::to_string(V) + ")"; }

}  // namespace

void memn2n_temporal_indices(std::span<const int32_t> counts, int64_t memory_size, Rng* noise,
                             std::span<int32_t> out) {
  int64_t total = 0;
  for (const int32_t count : counts) {
    if (count < 0) throw DataError("memn2n_temporal_indices: a window of " + std::to_string(count) + " sentences");
    total += count;
  }
  if (static_cast<int64_t>(out.size()) != total)
    throw ShapeError("memn2n_temporal_indices: out has " + std::to_string(out.size()) + " entries, expected " +
                     std::to_string(total) + " (the sum of the counts)");
  int64_t at = 0;
  if (noise == nullptr) {
    for (const int32_t count : counts)
      for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(at++)] = static_cast<int32_t>(count - 1 - i);
    return;
  }
  // The draws are uniform floats k / 2^24 (Rng::fill_uniform, batched), used as the integer k.
  constexpr float kUnit = 16777216.0f;   // 2^24
  auto bits = [&](float u) { return static_cast<int64_t>(u * kUnit); };
  // nblank ~ U{0, ..., ceil(count / 10)} empty memories per example, then count + nblank draws
  // each for the places in time.
  const size_t B = counts.size();
  std::vector<float> u(B);
  noise->fill_uniform(u, 0.0f, 1.0f);
  std::vector<int64_t> places(B);
  int64_t draws = 0;
  for (size_t b = 0; b < B; ++b) {
    const int64_t most = (counts[b] * kNoisePercent + 99) / 100;
    places[b] = counts[b] + ((bits(u[b]) * (most + 1)) >> 24);
    draws += places[b];
  }
  u.resize(static_cast<size_t>(draws));
  noise->fill_uniform(u, 0.0f, 1.0f);
  // A uniformly random count-subset of the places {0, ..., count + nblank - 1}, largest first:
  // selection sampling (Knuth, TAOCP vol. 2, 3.4.2, Algorithm S) from the top, keeping place v
  // with probability needed / (v + 1) (exactly: k (v + 1) < needed 2^24, certain once
  // needed = v + 1).
  const int64_t* place = places.data();
  const float* draw = u.data();
  for (size_t b = 0; b < B; ++b, ++place) {
    int64_t needed = counts[b];
    for (int64_t v = *place - 1; v >= 0; --v, ++draw)
      if (needed > 0 && bits(*draw) * (v + 1) < (needed << 24)) {
        out[static_cast<size_t>(at++)] = static_cast<int32_t>(std::min(v, memory_size - 1));
        --needed;
      }
  }
}

// ---- construction ----------------------------------------------------------------------------

MemN2N::MemN2N(const MemN2NConfig& config, Rng& init) : config_(config) {
  config_.validate();
  const MemN2NConfig& c = config_;
  const int64_t V = c.vocab_size, E = c.embedding_size, Mm = c.memory_size;
  constexpr float kStd = 0.1f;   // N(0, 0.1²), the paper's initialisation
  auto draw = [&](const std::string& name, const Shape& shape) { return Param(name, randn(shape, init, kStd)); };
  const bool adjacent = c.tying == MemN2NTying::adjacent;
  std::vector<std::string> tables, times;
  if (adjacent) {
    // (Appending to a std::string rather than `"C" + std::to_string(k)`, which draws a false
    // -Wrestrict from GCC 12.)
    auto numbered = [](const char* prefix, int64_t k) { return std::string(prefix).append(std::to_string(k)); };
    tables.push_back("A1");
    times.push_back("T_A1");
    for (int64_t k = 1; k <= c.hops; ++k) {
      tables.push_back(numbered("C", k));
      times.push_back(numbered("T_C", k));
    }
  } else {
    question_ = draw("B", {V, E});
    tables = {"A", "C"};
    times = {"T_A", "T_C"};
  }
  for (const std::string& name : tables) memory_.push_back(draw(name, {V, E}));
  if (c.temporal)
    for (const std::string& name : times) temporal_.push_back(draw(name, {Mm, E}));
  if (!adjacent) {
    H_ = draw("H", {E, E});
    output_ = draw("W", {V, E});
  }
}

ParamList MemN2N::params() {
  ParamList list;
  if (question_.value.defined()) list.push_back(&question_);
  for (Param& p : memory_) list.push_back(&p);
  for (Param& p : temporal_) list.push_back(&p);
  if (H_.value.defined()) list.push_back(&H_);
  if (output_.value.defined()) list.push_back(&output_);
  return list;
}

// ---- forward ---------------------------------------------------------------------------------

Dims MemN2NImpl::dims(const MemN2N& m, const QaBatch& batch) {
  const MemN2NConfig& c = m.config_;
  Dims d;
  check_tensor(batch.story, {kAny, kAny, kAny}, "memnet: story [B, Ms, Ws]", DType::i32);
  d.B = batch.story.dim(0);
  d.Ms = batch.story.dim(1);
  d.Ws = batch.story.dim(2);
  if (d.B == 0) throw ShapeError("memnet: story [B, Ms, Ws] has B = 0 (an empty batch)");
  check_tensor(batch.story_len, {d.B}, "memnet: story_len [B]", DType::i32);
  check_tensor(batch.question, {d.B, kAny}, "memnet: question [B, Wq]", DType::i32);
  check_tensor(batch.answer, {d.B}, "memnet: answer [B]", DType::i32);
  d.Wq = batch.question.dim(1);
  d.V = c.vocab_size;
  d.E = c.embedding_size;
  d.K = c.hops;
  d.S = c.memory_tables();
  d.Mm = c.memory_size;
  d.position = c.encoding != MemN2NEncoding::bow;
  d.temporal = c.temporal;
  d.adjacent = c.tying == MemN2NTying::adjacent;

  // Every id is checked, so that no row of a table is read out of range.
  const int32_t* len = batch.story_len.idata();
  for (int64_t b = 0; b < d.B; ++b)
    if (len[b] < 0 || len[b] > d.Ms)
      throw DataError("memnet: story_len[" + std::to_string(b) + "] = " + std::to_string(len[b]) +
                      " is outside [0, Ms = " + std::to_string(d.Ms) + "]");
  const int32_t* story = batch.story.idata();
  for (int64_t x = 0; x < batch.story.numel(); ++x)
    if (story[x] < 0 || story[x] >= d.V) {
      const int64_t j = x % d.Ws, i = x / d.Ws % d.Ms, b = x / (d.Ws * d.Ms);
      throw DataError("memnet: story[" + std::to_string(b) + ", " + std::to_string(i) + ", " + std::to_string(j) +
                      "] = " + std::to_string(story[x]) + id_range(d.V));
    }
  const int32_t* q = batch.question.idata();
  for (int64_t x = 0; x < batch.question.numel(); ++x)
    if (q[x] < 0 || q[x] >= d.V)
      throw DataError("memnet: question[" + std::to_string(x / d.Wq) + ", " + std::to_string(x % d.Wq) +
                      "] = " + std::to_string(q[x]) + id_range(d.V));
  const int32_t* a = batch.answer.idata();
  for (int64_t b = 0; b < d.B; ++b)
    if (a[b] < 0 || a[b] >= d.V)
      throw DataError("memnet: answer[" + std::to_string(b) + "] = " + std::to_string(a[b]) + id_range(d.V));
  return d;
}

void MemN2NImpl::prepare(const MemN2N& m, const QaBatch& batch, Rng* noise, Run& run) {
  run.d = dims(m, batch);
  const Dims& d = run.d;
  const int64_t B = d.B, Ms = d.Ms, E = d.E;
  run.linear_start = m.linear_start_;
  run.n.assign(batch.story_len.idata(), batch.story_len.idata() + B);
  run.w0.resize(static_cast<size_t>(B));
  Tensor tix({B, Ms}, DType::i32);
  run.story_bags.options.lengths = Tensor::uninitialized({B, Ms}, DType::i32);
  std::fill_n(run.story_bags.options.lengths.idata(), B * Ms, -1);   // an absent bag: no sentence read there
  run.question_bags.options.lengths = Tensor::uninitialized({B}, DType::i32);
  run.cost.resize(static_cast<size_t>(B));
  const int32_t* story = batch.story.idata();
  // The windows' temporal indices, example after example. Random noise moves them only: without
  // temporal encoding nothing is drawn.
  std::vector<int32_t> count(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    run.w0[b] = static_cast<int32_t>(std::max<int64_t>(0, run.n[b] - d.Mm));
    count[b] = run.n[b] - run.w0[b];
  }
  std::vector<int32_t> times(static_cast<size_t>(std::accumulate(count.begin(), count.end(), int64_t{0})));
  memn2n_temporal_indices(count, d.Mm, d.temporal ? noise : nullptr, times);
  int32_t* slot_time = tix.idata();
  for (int64_t b = 0, at = 0; b < B; at += count[b], ++b)
    std::copy_n(times.begin() + at, count[b], slot_time + b * Ms + run.w0[b]);
  if (d.temporal) run.story_bags.options.start_ids = std::move(tix);
  int32_t* slen = run.story_bags.options.lengths.idata();
  int32_t* qlen = run.question_bags.options.lengths.idata();
  const int32_t* question = batch.question.idata();
  run.bag_work = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = run.n[b], w0 = run.w0[b];
    int64_t words = 0;
    for (int64_t i = w0; i < n; ++i) {
      slen[b * Ms + i] = word_count(story + (b * Ms + i) * d.Ws, d.Ws);
      words += slen[b * Ms + i];
    }
    qlen[b] = word_count(question + b * d.Wq, d.Wq);
    // Embedding every sentence with every table (and its temporal row), and the question.
    run.bag_work += ((words + (d.temporal ? n - w0 : 0)) * d.S + qlen[b]) * E;
    // The hops over the window.
    run.cost[b] = 2 * d.K * (n - w0) + 1;
  }
  // l_kj, 1-based j and k, for sentences of J = 1 .. Wmax words: the paper's (1 - j/J) - (k/E)(1 -
  // 2j/J), or the code's 1 + 4 (k - (E+1)/2) (j - (Jf+1)/2) / (E Jf) with Jf = sentence_length.
  const int64_t Wmax = std::max(d.Ws, d.Wq);
  if (d.position) {
    const bool fixed = m.config_.encoding == MemN2NEncoding::position_fixed;
    const double Jf = static_cast<double>(m.config_.sentence_length), dE = static_cast<double>(E);
    Tensor encoding({Wmax + 1, Wmax, E});
    float* pe = encoding.data();
    for (int64_t J = 1; J <= Wmax; ++J)
      for (int64_t j = 1; j <= J; ++j)
        for (int64_t k = 1; k <= E; ++k) {
          const double jJ = static_cast<double>(j) / static_cast<double>(J), dk = static_cast<double>(k);
          const double l = fixed ? 1.0 + 4.0 * (dk - (dE + 1) / 2) * (static_cast<double>(j) - (Jf + 1) / 2) / (dE * Jf)
                                 : (1.0 - jJ) - dk / dE * (1.0 - 2.0 * jJ);
          pe[(J * Wmax + j - 1) * E + k - 1] = static_cast<float>(l);
        }
    run.question_bags.options.position_weights = encoding;
    run.story_bags.options.position_weights = std::move(encoding);
  }
}

void MemN2NImpl::forward_row(const MemN2N& m, Run& run, int64_t b) {
  const Dims& d = run.d;
  const int64_t B = d.B, Ms = d.Ms, E = d.E, K = d.K, n = run.n[b], w0 = run.w0[b];
  // The hops (the sentences and the question are embedded: forward).
  const float* H = d.adjacent ? nullptr : m.H_.value.data();
  for (int64_t k = 0; k < K; ++k) {
    const float* u = run.U.data() + (k * B + b) * E;
    float* next = run.U.data() + ((k + 1) * B + b) * E;
    const float* mem = run.Mem.data() + (in_table(d, k) * B + b) * Ms * E;
    const float* out = run.Mem.data() + (out_table(d, k) * B + b) * Ms * E;
    float* p = run.P.data() + (b * K + k) * Ms;
    std::fill(p, p + Ms, 0.0f);
    ops::rows_dot(mem + w0 * E, E, u, n - w0, p + w0);
    if (!run.linear_start && n > w0) {   // softmax over the window (and the empty slots' zeros)
      const int64_t empties = std::max<int64_t>(0, m.config_.empty_slots - (n - w0));
      float mx = *std::max_element(p + w0, p + n);
      if (empties > 0) mx = std::max(mx, 0.0f);
      for (int64_t i = w0; i < n; ++i) p[i] = ops::exp_approx(p[i] - mx);
      float sum = empties > 0 ? static_cast<float>(empties) * ops::exp_approx(-mx) : 0.0f;
      for (int64_t i = w0; i < n; ++i) sum += p[i];
      const float inv = 1.0f / sum;
      for (int64_t i = w0; i < n; ++i) p[i] *= inv;
    }
    // u^{k+1} = u^k (adjacent) or H u^k (layerwise), + o = Σ p_i c_i.
    if (H == nullptr) {
      std::memcpy(next, u, static_cast<size_t>(E) * sizeof(float));
    } else {
      ops::rows_dot(H, E, u, E, next);   // H's rows: next[e] = H[e] · u
    }
    ops::weighted_rows_sum(out + w0 * E, E, p + w0, n - w0, next);
  }
}

void MemN2NImpl::forward(const MemN2N& m, const QaBatch& batch, Run& run) {
  const Dims& d = run.d;
  const int64_t B = d.B, E = d.E, K = d.K;
  // The window's sentences, embedded with every memory table from their temporal rows (one bag
  // per slot, the other slots absent, ops/embedding_bag.hpp), and the question u^1: checked here,
  // summed example by example just before the example's hops read them, while they are in cache.
  std::vector<const Tensor*> tables, times;
  tables.reserve(static_cast<size_t>(d.S));
  times.reserve(static_cast<size_t>(d.S));
  for (int64_t s = 0; s < d.S; ++s) {
    tables.push_back(&m.memory_[s].value);
    if (d.temporal) times.push_back(&m.temporal_[s].value);
  }
  const Tensor* question[1] = {&question_table(m).value};
  run.Mem = ops::embedding_bag_prepare(batch.story, tables, times, run.story_bags.options, run.story_bags);
  Tensor u1 = ops::embedding_bag_prepare(batch.question, question, {}, run.question_bags.options, run.question_bags);
  run.U = Tensor::uninitialized({K + 1, B, E});
  run.P = Tensor::uninitialized({B, K, d.Ms});
  int64_t work = 0;
  for (int64_t c : run.cost) work += c;
  work *= E;
  flops::add(work + (d.adjacent ? 0 : B * K * E * E));
  flops::add_sequential_steps(K);   // the hops are a chain (core/flops.hpp)
  over_row_blocks(run.cost, threads_for(run.bag_work + work), [&](int64_t b0, int64_t b1) {
    ops::embedding_bag_sum(run.story_bags, tables, times, b0 * d.Ms, b1 * d.Ms, run.Mem);
    ops::embedding_bag_sum(run.question_bags, question, {}, b0, b1, u1);
    std::memcpy(run.U.data() + b0 * E, u1.data() + b0 * E, static_cast<size_t>((b1 - b0) * E) * sizeof(float));
    for (int64_t b = b0; b < b1; ++b) forward_row(m, run, b);
  });
  // The answer logits a = W u^{K+1}: one GEMM over the batch.
  run.logits = Tensor::uninitialized({B, d.V});
  blas::gemm(Trans::N, Trans::T, B, d.V, E, 1.0f, run.U.data() + K * B * E, E, answer_table(m).value.data(), E, 0.0f,
             run.logits.data(), d.V);
}

MemN2NStats MemN2NImpl::loss(Run& run, const QaBatch& batch, int32_t* predictions, bool backward) {
  const int64_t B = run.d.B, V = run.d.V;
  const float inv_B = 1.0f / static_cast<float>(B);
  MemN2NStats s;
  s.questions = B;
  for (int64_t b = 0; b < B; ++b) {
    float* row = run.logits.data() + b * V;
    const int32_t target = batch.answer.idata()[b];
    const int64_t best = std::max_element(row, row + V) - row;   // the first maximum
    const float mx = row[best];
    double sum = 0.0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v] - mx));
    s.loss_nats += static_cast<double>(mx) + std::log(sum) - static_cast<double>(row[target]);
    s.correct += best == target;
    if (predictions != nullptr) predictions[b] = static_cast<int32_t>(best);
    if (backward) {   // dlogits = (softmax - onehot) / B
      const float inv_sum = static_cast<float>(1.0 / sum);
      for (int64_t v = 0; v < V; ++v) row[v] = std::exp(row[v] - mx) * inv_sum * inv_B;
      row[target] -= inv_B;
    }
  }
  return s;
}

// ---- backward --------------------------------------------------------------------------------

// Row b of every hop's backward: dU's block K (du^{K+1}) in, blocks K-1 .. 0 out; this row's
// window slots of dMem written (every table: each is reached by some hop), dP as scratch.
void MemN2NImpl::backward_row(const MemN2N& m, Run& run, Tensor& dU_, Tensor& dMem_, Tensor& dP_, int64_t b) {
  const Dims& d = run.d;
  const int64_t B = d.B, Ms = d.Ms, E = d.E, K = d.K, n = run.n[b], w0 = run.w0[b];
  float* dU = dU_.data();
  float* dMem = dMem_.data();
  float* dp = dP_.data() + b * Ms;
  const float* H = d.adjacent ? nullptr : m.H_.value.data();
  for (int64_t k = K - 1; k >= 0; --k) {
    const float* g = dU + ((k + 1) * B + b) * E;   // dloss / du^{k+1}
    float* du = dU + (k * B + b) * E;
    const float* u = run.U.data() + (k * B + b) * E;
    const float* mem = run.Mem.data() + (in_table(d, k) * B + b) * Ms * E;
    const float* out = run.Mem.data() + (out_table(d, k) * B + b) * Ms * E;
    float* dmem = dMem + (in_table(d, k) * B + b) * Ms * E;
    float* dout = dMem + (out_table(d, k) * B + b) * Ms * E;
    const float* p = run.P.data() + (b * K + k) * Ms;
    // The first hop (backward) to reach a table's slots writes their gradient, later ones add:
    // table out(k) first at the last hop; table in(k) at hop k (adjacent) or the last (layerwise).
    const bool first_out = k == K - 1, first_in = d.adjacent || k == K - 1;
    // o = Σ p_i c_i: dp_i = g · c_i, dc_i += p_i g.
    ops::weighted_rows_sum_backward(out + w0 * E, E, p + w0, n - w0, g, dp + w0, dout + w0 * E,
                                    /*accumulate=*/!first_out);
    // p = softmax(scores): ds_i = p_i (dp_i - Σ_j p_j dp_j) (in place); linear start: ds = dp.
    // Empty slots (empty_slots) read nothing, so their dp is 0 and the sum is the window's.
    if (!run.linear_start) {
      float pdp = 0.0f;
      for (int64_t i = w0; i < n; ++i) pdp += p[i] * dp[i];
      for (int64_t i = w0; i < n; ++i) dp[i] = p[i] * (dp[i] - pdp);
    }
    // u^{k+1} = u^k + o (du = g) or H u^k + o (du = H^T g); scores_i = u^k · m_i.
    if (H == nullptr) {
      std::memcpy(du, g, static_cast<size_t>(E) * sizeof(float));
    } else {   // du = Σ_e g_e H[e]
      std::fill(du, du + E, 0.0f);
      ops::weighted_rows_sum(H, E, g, E, du);
    }
    // du += Σ_i ds_i m_i, dm_i += ds_i u^k.
    ops::weighted_rows_sum(mem + w0 * E, E, dp + w0, n - w0, du);
    ops::weighted_rows_sum_backward(/*rows=*/nullptr, E, dp + w0, n - w0, u, /*dw=*/nullptr, dmem + w0 * E,
                                    /*accumulate=*/!first_in);
  }
}

void MemN2NImpl::backward(MemN2N& m, Run& run) {
  const Dims& d = run.d;
  const int64_t B = d.B, E = d.E, K = d.K, V = d.V;
  const float* dlogits = run.logits.data();
  Tensor dU = Tensor::uninitialized({K + 1, B, E});
  // The answer layer: du^{K+1} = dlogits W, dW += dlogits^T u^{K+1}.
  Param& W = answer_table(m);
  blas::gemm(Trans::N, Trans::N, B, E, V, 1.0f, dlogits, V, W.value.data(), E, 0.0f, dU.data() + K * B * E, E);
  blas::gemm(Trans::T, Trans::N, V, E, B, 1.0f, dlogits, V, run.U.data() + K * B * E, E, 1.0f, W.grad.data(), E);

  // The hops, last first, example by example.
  Tensor dMem = Tensor::uninitialized({d.S, B, d.Ms, E});
  Tensor dP = Tensor::uninitialized({B, d.Ms});
  int64_t work = 0;
  for (int64_t c : run.cost) work += c;
  work *= E;
  flops::add(work + (d.adjacent ? 0 : 2 * B * K * E * E));
  flops::add_sequential_steps(K);
  over_row_blocks(run.cost, threads_for(run.bag_work + work), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) backward_row(m, run, dU, dMem, dP, b);
  });
  // Layerwise: dH += Σ_k du^{k+1} (u^k)^T, one GEMM over every hop's rows.
  if (!d.adjacent)
    blas::gemm(Trans::T, Trans::N, E, E, K * B, 1.0f, dU.data() + B * E, E, run.U.data(), E, 1.0f, m.H_.grad.data(),
               E);
  // The embedding tables' gradients: the sentences' into every memory table and its temporal
  // table (whole tables per thread), then the question's into its table (adjacent: A1, after
  // the sentences' gradient in it).
  std::vector<Tensor*> dtables, dtimes;
  dtables.reserve(static_cast<size_t>(d.S));
  dtimes.reserve(static_cast<size_t>(d.S));
  for (int64_t s = 0; s < d.S; ++s) {
    dtables.push_back(&m.memory_[s].grad);
    if (d.temporal) dtimes.push_back(&m.temporal_[s].grad);
  }
  ops::embedding_bag_backward(dMem, run.story_bags, dtables, dtimes);
  Tensor* dquestion[1] = {&question_table(m).grad};
  ops::embedding_bag_backward(dU.rows(0, 1), run.question_bags, dquestion, {});
}

// ---- the public steps ------------------------------------------------------------------------

MemN2NStats MemN2N::train_step(const QaBatch& batch, Rng* noise) {
  Impl::Run run;
  Impl::prepare(*this, batch, noise, run);
  Impl::forward(*this, batch, run);
  const MemN2NStats stats = Impl::loss(run, batch, nullptr, /*backward=*/true);
  Impl::backward(*this, run);
  return stats;
}

MemN2NResult MemN2N::evaluate(const QaBatch& batch) const {
  MemN2NResult r = answer(batch);
  r.attention = Tensor();   // evaluation returns the answers and their sums only
  return r;
}

MemN2NResult MemN2N::answer(const QaBatch& batch) const {
  Impl::Run run;
  Impl::prepare(*this, batch, nullptr, run);
  Impl::forward(*this, batch, run);
  MemN2NResult r;
  r.predictions = Tensor({run.d.B}, DType::i32);
  r.stats = Impl::loss(run, batch, r.predictions.idata(), /*backward=*/false);
  r.attention = run.P;
  return r;
}

}  // namespace attn::memnet

// Whole-model speed of the end-to-end memory network (models::MemN2N) on an input the size of a
// 1k bAbI task: full training steps (zero grads, MemN2N::train_step, plain SGD update), in
// questions/s and microseconds per step. The attnlab side of a future experiments/perf/memnet
// (its PyTorch twin is not written yet).
//
// Model: the paper's single-task MemN2N (position encoding, temporal encoding, adjacent tying,
// E = 20, 3 hops, memory_size 50), V = --vocab. Random noise is on (as in PE LS RN training).
//
// Data: --questions generated questions, deterministic from --seed: a memory of Ms = 50 slots of
// Ws = 7 words, questions of Wq = 4 words, ids in [4, V). --stories full: every example fills all
// 50 slots with 6-word sentences (the largest 1k-task memory: tasks 2, 3 cut to 50); uniform:
// 1-50 sentences of 1-7 words. One repetition trains on the pool in consecutive batches of
// --batch (no shuffling); the model keeps training from one repetition to the next.
//
// Prints one line of key=value pairs:
//   impl=attnlab mode=train-b<B>-<stories> threads=1 batch=B questions_per_s=... us_per_step=...
//   median_s=... min_s=... max_s=... cpu_questions_per_s=... params=... questions=...
#include <cstdio>
#include <string>

#include "attn/core/threading.hpp"
#include "attn/models/memnet.hpp"
#include "perf_util.hpp"

namespace {

using namespace attn;

data::QaSplit make_pool(int64_t N, int64_t V, bool full, uint64_t seed) {
  const int64_t Ms = 50, Ws = 7, Wq = 4;
  Rng rng(seed);
  data::QaSplit pool;
  pool.story = Tensor({N, Ms, Ws}, DType::i32);
  pool.story_len = Tensor({N}, DType::i32);
  pool.question = Tensor({N, Wq}, DType::i32);
  pool.answer = Tensor({N}, DType::i32);
  for (int64_t b = 0; b < N; ++b) {
    const int64_t n = full ? Ms : 1 + rng.uniform_int(Ms);
    pool.story_len.idata()[b] = static_cast<int32_t>(n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t J = full ? 6 : 1 + rng.uniform_int(Ws);
      for (int64_t j = 0; j < J; ++j)
        pool.story.idata()[(b * Ms + i) * Ws + j] = static_cast<int32_t>(4 + rng.uniform_int(V - 4));
    }
    for (int64_t j = 0; j < 3; ++j)
      pool.question.idata()[b * Wq + j] = static_cast<int32_t>(4 + rng.uniform_int(V - 4));
    pool.answer.idata()[b] = static_cast<int32_t>(4 + rng.uniform_int(V - 4));
  }
  return pool;
}

// Rows [begin, end) of the pool (views, no copy).
data::QaSplit rows(const data::QaSplit& pool, int64_t begin, int64_t end) {
  data::QaSplit s;
  s.story = pool.story.rows(begin, end);
  s.story_len = pool.story_len.rows(begin, end);
  s.question = pool.question.rows(begin, end);
  s.answer = pool.answer.rows(begin, end);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const perf::Args args(argc, argv,
                        {{"threads", "1"}, {"batch", "32"}, {"questions", "1024"}, {"vocab", "40"},
                         {"stories", "full"}, {"steps", "20"}, {"warmup", "2"}, {"seed", "1"}});
  set_num_threads(static_cast<int>(args.integer("threads")));
  const int64_t B = args.integer("batch"), N = args.integer("questions"), V = args.integer("vocab");
  const std::string stories = args.str("stories");
  if (B < 1 || N % B != 0 || (stories != "full" && stories != "uniform")) {
    std::fprintf(stderr, "perf_memnet: --questions must be a multiple of --batch; --stories full or uniform\n");
    return 2;
  }
  const data::QaSplit pool = make_pool(N, V, stories == "full", static_cast<uint64_t>(args.integer("seed")));
  models::MemN2NConfig c;
  c.vocab_size = V;
  Rng init(static_cast<uint64_t>(args.integer("seed"))), noise(7);
  models::MemN2N model(c, init);
  const ParamList params = model.params();
  int64_t n_params = 0;
  for (Param* p : params) n_params += p->value.numel();
  auto repetition = [&] {
    for (int64_t b = 0; b < N; b += B) {
      zero_grads(params);
      model.train_step(rows(pool, b, b + B), &noise);
      for (Param* p : params) {   // SGD, lr 0.01
        float* w = p->value.data();
        const float* g = p->grad.data();
        for (int64_t i = 0; i < p->value.numel(); ++i) w[i] -= 0.01f * g[i];
      }
    }
  };
  const perf::Times times = perf::time_reps(args.integer("warmup"), args.integer("steps"), repetition);
  const double med = perf::median(times.wall), q = static_cast<double>(N);
  std::printf(
      "impl=attnlab mode=train-b%lld-%s threads=%d batch=%lld questions_per_s=%.1f us_per_step=%.1f median_s=%.4f "
      "min_s=%.4f max_s=%.4f cpu_questions_per_s=%.1f params=%lld questions=%lld\n",
      static_cast<long long>(B), stories.c_str(), num_threads(), static_cast<long long>(B), q / med,
      1e6 * med * static_cast<double>(B) / q, med, times.wall.front(), times.wall.back(), q / perf::median(times.cpu),
      static_cast<long long>(n_params), static_cast<long long>(N));
  return 0;
}

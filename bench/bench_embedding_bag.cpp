// Embedding bags (ops::embedding_bag_forward / _backward): forward and backward timed apart, on
// 1 and 2 threads. Shapes (argument `shape`):
//   0 memnet_task1  the memory network's sentence embeddings on a 1k-bAbI task-1-sized batch:
//                   32 stories of 2-10 sentences (Ms 10 slots, absent beyond the story) of 3-6
//                   words (Ws 6), read with 4 tables (A1, C1..C3) of V 23 x E 20 from temporal
//                   start rows [50, 20], with position weights (perf_memnet's step)
//   1 memnet_joint  the same on the joint set's shape: stories of 1-50 sentences (Ms 50) of
//                   3-11 words, V 178, E 50
//   2 memnet_large  the joint shape at batch 512: the bags split over the threads (above
//                   kEmbeddingBagParallelMinWork)
//   3 bow           a bag-of-words layer: 2048 bags of 8-64 ids (W 64) over one table of
//                   V 30000 x E 256 with sample weights (the backward's 64-column units)
// Counters: GFLOP/s of the multiply-adds the op counts (attn::flops, 2 flops each) and
// rows_per_s, the table rows a call adds (items_per_second). No sgemm yardstick: these are
// gathers and scatters of rows, bound by loads and stores, not products.
#include <benchmark/benchmark.h>

#include <iterator>
#include <utility>
#include <vector>

#include "attn/core/flops.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/ops/embedding_bag.hpp"
#include "bench_util.hpp"

namespace {

using attn::DType;
using attn::Tensor;

struct Shape {
  const char* name;
  int64_t B, Ms, Ws, min_slots, min_words, V, E, T;   // Ms 1: one bag per example (bow)
  bool memnet;                                        // temporal start rows, position weights
};

constexpr Shape kShapes[] = {
    {"memnet_task1", 32, 10, 6, 2, 3, 23, 20, 4, true},
    {"memnet_joint", 32, 50, 11, 1, 3, 178, 50, 4, true},
    {"memnet_large", 512, 50, 11, 1, 3, 178, 50, 4, true},
    {"bow", 2048, 1, 64, 1, 8, 30000, 256, 1, false},
};

struct Problem {
  Tensor ids, dy;
  std::vector<Tensor> tables, starts, dtables, dstarts;
  attn::ops::EmbeddingBagOptions options;
  int64_t rows = 0;   // table rows added by one forward (ids over every table, start rows included)

  // The op takes its tables by pointer.
  template <class T>
  static auto pointers(T& list) {
    std::vector<decltype(&list.front())> p;
    for (auto& t : list) p.push_back(&t);
    return p;
  }
};

Problem make_problem(const Shape& s) {
  attn::Rng rng(1);
  const int64_t N = s.B * s.Ms;
  Problem p;
  p.ids = Tensor({N, s.Ws}, DType::i32);
  Tensor lengths = Tensor({N}, DType::i32), start_ids = Tensor({N}, DType::i32);
  for (int64_t b = 0; b < s.B; ++b) {
    const int64_t slots = s.min_slots + rng.uniform_int(s.Ms - s.min_slots + 1);
    for (int64_t i = 0; i < s.Ms; ++i) {
      const int64_t n = b * s.Ms + i;
      if (i >= slots) {
        lengths.idata()[n] = -1;   // a padding slot of the batch: absent
        continue;
      }
      const int64_t J = s.min_words + rng.uniform_int(s.Ws - s.min_words + 1);
      lengths.idata()[n] = static_cast<int32_t>(J);
      start_ids.idata()[n] = static_cast<int32_t>(slots - 1 - i);
      for (int64_t j = 0; j < J; ++j) p.ids.idata()[n * s.Ws + j] = static_cast<int32_t>(1 + rng.uniform_int(s.V - 1));
      p.rows += s.T * (J + (s.memnet ? 1 : 0));
    }
  }
  p.options.lengths = lengths;
  for (int64_t t = 0; t < s.T; ++t) {
    p.tables.push_back(attn::randn({s.V, s.E}, rng, 0.1f));
    p.dtables.push_back(Tensor({s.V, s.E}));
  }
  if (s.memnet) {
    for (int64_t t = 0; t < s.T; ++t) {
      p.starts.push_back(attn::randn({50, s.E}, rng, 0.1f));
      p.dstarts.push_back(Tensor({50, s.E}));
    }
    p.options.start_ids = start_ids;
    p.options.position_weights = attn::rand_uniform({s.Ws + 1, s.Ws, s.E}, rng, 0.0f, 1.0f);
  } else {
    p.options.sample_weights = attn::rand_uniform({N, s.Ws}, rng, 0.0f, 1.0f);
  }
  p.dy = attn::randn({s.T, N, s.E}, rng);
  return p;
}

// Multiply-adds the library counts in one call of `run`.
template <class Run>
int64_t counted(Run&& run) {
  const int64_t before = attn::flops::count();
  run();
  return attn::flops::count() - before;
}

void report(benchmark::State& state, const Shape& s, const Problem& p, int64_t multiply_adds) {
  attn::bench::report_gflops(state, 2.0 * static_cast<double>(multiply_adds));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * p.rows);
  state.SetLabel(s.name);
}

void BM_embedding_bag_forward(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  attn::bench::use_threads(state, /*arg=*/1);
  const Problem p = make_problem(s);
  const auto tables = Problem::pointers(p.tables), starts = Problem::pointers(p.starts);
  auto run = [&] {
    Tensor y = attn::ops::embedding_bag_forward(p.ids, tables, starts, p.options, nullptr);
    benchmark::DoNotOptimize(y.data());
  };
  const int64_t mads = counted(run);
  for (auto _ : state) run();
  report(state, s, p, mads);
}

void BM_embedding_bag_backward(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  attn::bench::use_threads(state, /*arg=*/1);
  Problem p = make_problem(s);
  attn::ops::EmbeddingBagCache cache;
  attn::ops::embedding_bag_forward(p.ids, Problem::pointers(std::as_const(p.tables)),
                                   Problem::pointers(std::as_const(p.starts)), p.options, &cache);
  const auto dtables = Problem::pointers(p.dtables), dstarts = Problem::pointers(p.dstarts);
  auto run = [&] {
    Tensor dw = attn::ops::embedding_bag_backward(p.dy, cache, dtables, dstarts);
    benchmark::DoNotOptimize(dw.defined() ? dw.data() : nullptr);
    benchmark::DoNotOptimize(p.dtables.front().data());
  };
  const int64_t mads = counted(run);
  for (auto _ : state) run();
  report(state, s, p, mads);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "threads"});
  for (int64_t shape = 0; shape < static_cast<int64_t>(std::size(kShapes)); ++shape)
    for (int threads : {1, 2}) b->Args({shape, threads});
}

}  // namespace

BENCHMARK(BM_embedding_bag_forward)
    ->Name("embedding_bag_forward")
    ->Apply(shapes)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_embedding_bag_backward)
    ->Name("embedding_bag_backward")
    ->Apply(shapes)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();

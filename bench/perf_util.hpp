// Helpers shared by the whole-model speed programs (bench/perf_*.cpp, run by
// experiments/perf/<model>/run.sh beside the same model in PyTorch): options, timing of warm
// repetitions, and the sgemm-bound limit of a model's list of matrix products.
//
// A program prints one line of key=value pairs, which run.sh joins with the PyTorch script's
// line of the same form:
//   impl=attnlab mode=train threads=1 tokens_per_s=... median_s=... min_s=... max_s=...
//   cpu_tokens_per_s=... params=... tokens=... gflop_per_token=... counted_per_listed=... sgemm_gflops=...
//   limit_tokens_per_s=... of_limit=...
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "attn/data/token_batch.hpp"
#include "bench_util.hpp"

namespace attn::perf {

// --key value pairs; a key not given keeps its default. Unknown keys are an error (exit 2),
// so a typo in run.sh does not silently measure the default.
class Args {
 public:
  Args(int argc, char** argv, std::map<std::string, std::string> defaults) : values_(std::move(defaults)) {
    for (int i = 1; i < argc; i += 2) {
      const std::string key = argv[i];
      if (key.rfind("--", 0) != 0 || i + 1 >= argc || values_.count(key.substr(2)) == 0) {
        std::fprintf(stderr, "%s: bad option '%s'; options:", argv[0], argv[i]);
        for (const auto& [k, v] : values_) std::fprintf(stderr, " --%s (%s)", k.c_str(), v.c_str());
        std::fprintf(stderr, "\n");
        std::exit(2);
      }
      values_[key.substr(2)] = argv[i + 1];
    }
  }
  std::string str(const std::string& key) const { return values_.at(key); }
  int64_t integer(const std::string& key) const { return std::stoll(values_.at(key)); }

 private:
  std::map<std::string, std::string> values_;
};

// B pairs of source and target length L (S = T = L) over a vocabulary of V: deterministic
// regular tokens (ids >= 4), every sentence full length, targets ending in EOS. The PyTorch scripts
// (experiments/perf/*/torch_*.py) build the same batch with the same formula.
inline data::TokenBatch make_batch(int64_t B, int64_t L, int64_t V) {
  data::TokenBatch batch;
  batch.src = Tensor({B, L}, DType::i32);
  batch.tgt = Tensor({B, L}, DType::i32);
  batch.src_len = Tensor({B}, DType::i32);
  batch.tgt_len = Tensor({B}, DType::i32);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < L; ++t) {
      batch.src.idata()[b * L + t] = static_cast<int32_t>(4 + (b * 31 + t * 17) % (V - 4));
      batch.tgt.idata()[b * L + t] = static_cast<int32_t>(t == L - 1 ? data::kEos
                                                                     : 4 + (b * 13 + t * 29 + 7) % (V - 4));
    }
    batch.src_len.idata()[b] = static_cast<int32_t>(L);
    batch.tgt_len.idata()[b] = static_cast<int32_t>(L);
  }
  return batch;
}

// Seconds per call of `reps` timed calls of run() after `warmup` untimed ones, each sorted:
// elapsed time, and the process's CPU time (all threads). On a machine shared with other work
// the CPU time of a 1-thread run is the steadier figure; with 2 threads it also counts OpenMP
// threads spinning while they wait.
struct Times {
  std::vector<double> wall, cpu;
};
template <class Run>
Times time_reps(int64_t warmup, int64_t reps, Run&& run) {
  for (int64_t i = 0; i < warmup; ++i) run();
  Times t;
  for (int64_t i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = bench::process_cpu_seconds();
    run();
    t.cpu.push_back(bench::process_cpu_seconds() - c0);
    t.wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.wall.begin(), t.wall.end());
  std::sort(t.cpu.begin(), t.cpu.end());
  return t;
}

inline double median(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

// Products of a linear layer y[B*T, out] = x[B*T, in] W^T over its N = B*T rows: the forward,
// and with `backward` also dx = dy W (B*T, in, out) and dW = dy^T x (out, in, B*T).
inline void add_linear(bench::GemmList& list, int64_t N, int64_t in, int64_t out, bool backward) {
  list.push_back({N, out, in});
  if (backward) {
    list.push_back({N, in, out});
    list.push_back({out, in, N});
  }
}

// Products of attention over `batch` (sequence, head) pairs, T queries and S keys of width HD:
// scores q k^T and context P v, and with `backward` dP = dO v^T, dv = P^T dO, dq = dS k,
// dk = dS^T q.
inline void add_attention(bench::GemmList& list, int64_t batch, int64_t T, int64_t S, int64_t HD, bool backward) {
  list.push_back({T, S, HD, batch});
  list.push_back({T, HD, S, batch});
  if (backward) {
    list.push_back({T, S, HD, batch});
    list.push_back({S, HD, T, batch});
    list.push_back({T, HD, S, batch});
    list.push_back({S, HD, T, batch});
  }
}

// Seconds that plain sgemm (OpenBLAS through attn::blas, current thread count) needs for the
// whole list: bench_util's Yardstick (exactly the listed shapes, batches measured on at most
// ~128 MB of operands), the median of runs repeated for at least min_seconds.
inline double sgemm_seconds(const bench::GemmList& gemms, double min_seconds = 0.1) {
  bench::Yardstick yardstick(gemms);
  yardstick.run();   // warm-up: first touch of the operands, OpenBLAS's buffers
  std::vector<double> runs;
  double spent = 0.0;
  while (spent < min_seconds || runs.size() < 3) {
    runs.push_back(yardstick.run().wall);
    spent += runs.back();
  }
  return bench::median(runs);
}

// The common tail of the output line: the list's flops per token, the library's own count of
// one repetition over the list (1 = the library did exactly the listed products), the
// yardstick's rate and the limit in tokens/s, and the measured rate as a fraction of it.
// measure_limit false (for profiling runs) skips the sgemm measurements and prints limit 0.
inline void print_result(const char* mode, double tokens, const Times& t, int64_t params,
                         const bench::GemmList& gemms, double counted_flop, bool measure_limit = true) {
  const std::vector<double>& times = t.wall;
  const double med = median(times), listed = bench::gemm_flop(gemms);
  const double limit_s = measure_limit ? sgemm_seconds(gemms) : 0.0;
  std::printf(
      "impl=attnlab mode=%s threads=%d tokens_per_s=%.1f median_s=%.4f min_s=%.4f max_s=%.4f cpu_tokens_per_s=%.1f "
      "params=%lld tokens=%.0f gflop_per_token=%.5f counted_per_listed=%.3f sgemm_gflops=%.1f "
      "limit_tokens_per_s=%.1f of_limit=%.3f mean_tokens_per_s=%.1f\n",
      mode, attn::num_threads(), tokens / med, med, times.front(), times.back(), tokens / median(t.cpu),
      static_cast<long long>(params),
      tokens, 1e-9 * listed / tokens, counted_flop / listed, 1e-9 * listed / limit_s, tokens / limit_s,
      limit_s / med, tokens * static_cast<double>(times.size()) / std::accumulate(times.begin(), times.end(), 0.0));
  std::fflush(stdout);
}

}  // namespace attn::perf

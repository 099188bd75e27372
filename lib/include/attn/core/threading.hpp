// One thread pool for everything: OpenMP. libattn links the OpenMP build of OpenBLAS, so GEMMs
// and the library's own `#pragma omp` loops run on the same threads and never oversubscribe.
#pragma once
#include <cstdint>

namespace attn {

// Elementwise loops over fewer elements than this stay on one thread: below it, waking the
// OpenMP team costs more than the work (measured on the ops' benchmarks).
inline constexpr int64_t kParallelMinElements = int64_t{1} << 15;

// Sets the thread count for OpenMP loops and OpenBLAS together, and the number of parts parallel
// work is divided into. n >= 1.
void set_num_threads(int n);
// The threads running now: the count set, or fewer while the thread governor
// (thread_governor.hpp) leaves cores to other processes.
int num_threads();
// How many parts the library divides parallel work into (the blocks of a split GEMM, the row
// blocks of a time loop, one task per thread or not): always the count set with set_num_threads
// (or OpenMP's default), however many threads run them. A part's arithmetic depends on its shape
// (OpenBLAS takes another kernel for a small product, with another order of additions), so the
// parts, not the threads, decide the bits: a run gives the same bits at any running count.
int num_parts();
// Runs n threads (1 <= n <= num_parts()) without changing how work is divided: the governor's
// lever, and a test's.
void set_running_threads(int n);
// Inside one of the library's parallel regions (active or not): work there runs on the calling
// thread as one part.
bool in_parallel_region();

// Whether a loop over `elements` independent elements is worth splitting over the threads: at
// least kParallelMinElements of them, and not inside a parallel region, where it is one part.
inline bool worth_splitting(int64_t elements) {
  return elements >= kParallelMinElements && !in_parallel_region();
}

// For a layer above core that keeps a thread setting of its own: set_num_threads(n) calls every
// registered hook with n, after setting OpenMP's, in the order they were registered. The BLAS
// seam registers OpenBLAS's setter this way, so core calls nothing above itself (the layers of
// docs/ARCHITECTURE.md). Register once, during static initialisation.
void on_set_num_threads(void (*hook)(int));

// Whether `tasks` equal tasks, one per thread at a time, keep `threads` threads busy at least
// 8/9 of the time: when they do not, splitting each task over all the threads balances better
// than one task per thread.
inline bool tasks_balance(int64_t tasks, int64_t threads) {
  const int64_t rounds = (tasks + threads - 1) / threads;
  return 8 * rounds * threads <= 9 * tasks;
}

}  // namespace attn

// One thread pool for everything: OpenMP. libattn links the OpenMP build of OpenBLAS, so GEMMs
// and the library's own `#pragma omp` loops run on the same threads and never oversubscribe.
#pragma once
#include <cstdint>

namespace attn {

// Elementwise loops over fewer elements than this stay on one thread: below it, waking the
// OpenMP team costs more than the work (measured on the ops' benchmarks).
inline constexpr int64_t kParallelMinElements = int64_t{1} << 15;

// Sets the thread count for OpenMP loops and OpenBLAS together. n >= 1.
void set_num_threads(int n);
int num_threads();

}  // namespace attn

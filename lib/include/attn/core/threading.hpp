// One thread pool for everything: OpenMP. libattn links the OpenMP build of OpenBLAS, so GEMMs
// and the library's own `#pragma omp` loops run on the same threads and never oversubscribe.
#pragma once

namespace attn {

// Sets the thread count for OpenMP loops and OpenBLAS together. n >= 1.
void set_num_threads(int n);
int num_threads();

}  // namespace attn

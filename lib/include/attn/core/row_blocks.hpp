// Independent batch rows in contiguous blocks, one block per thread, in ONE OpenMP parallel
// region: a model whose rows are independent sequences (the NTM's time loops, the memory
// network's hops) runs its whole loop per block, with no barrier per step.
#pragma once
#include <omp.h>

#include <cstdint>
#include <vector>

namespace attn {

// Calls rows(b0, b1) for `threads` contiguous blocks [b0, b1) of the B = cost.size() rows, the
// blocks splitting the rows' cost (one entry per row) about evenly; with threads <= 1 it is
// rows(0, B) on the calling thread, the same calls as a plain loop. The blocks change no value as
// long as every row's work is independent of the others'. A single row still runs inside the
// region (on thread 0): there the BLAS seam and OpenBLAS keep its small products on the calling
// thread instead of splitting each over the team (the NTM's batch-1 gemvs).
template <class Rows>
void over_row_blocks(const std::vector<int64_t>& cost, int threads, const Rows& rows) {
  const int64_t B = static_cast<int64_t>(cost.size());
  if (threads <= 1) {
    rows(int64_t{0}, B);
    return;
  }
  int64_t total = 0;
  for (int64_t c : cost) total += c;
  // Block k starts at the first row whose cost before it reaches k / threads of the total.
  std::vector<int64_t> start(static_cast<size_t>(threads) + 1, B);
  start[0] = 0;
  int64_t before = 0;
  size_t k = 1;
  for (int64_t b = 0; b < B; ++b) {
    while (k < static_cast<size_t>(threads) && before * threads >= total * static_cast<int64_t>(k)) start[k++] = b;
    before += cost[static_cast<size_t>(b)];
  }
#pragma omp parallel num_threads(threads)
  {
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    if (start[t + 1] > start[t]) rows(start[t], start[t + 1]);
  }
}

}  // namespace attn

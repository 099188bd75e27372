// Independent batch rows in contiguous blocks, one block per part (thread), in ONE OpenMP parallel
// region: a model whose rows are independent sequences (the NTM's time loops, the memory
// network's hops) runs its whole loop per block, with no barrier per step.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "attn/core/threading.hpp"

namespace attn {

// Calls rows(b0, b1) for `parts` contiguous blocks [b0, b1) of the B = cost.size() rows, the
// blocks splitting the rows' cost (one entry per row) about evenly, one block per running thread
// (num_threads(), fewer than parts while the thread governor holds threads back: then a thread
// runs several blocks in turn); with parts <= 1 it is rows(0, B) on the calling thread, the same
// calls as a plain loop. The blocks change no value as long as every row's work is independent
// of the others', but they do fix the shapes of the products inside, so `parts` must not depend
// on the running threads (threading.hpp: num_parts). A single row still runs inside the region
// (on thread 0): there the BLAS seam and OpenBLAS keep its small products on the calling thread
// instead of splitting each over the team (the NTM's batch-1 gemvs).
template <class Rows>
void over_row_blocks(const std::vector<int64_t>& cost, int parts, const Rows& rows) {
  const int64_t B = static_cast<int64_t>(cost.size());
  if (parts <= 1) {
    rows(int64_t{0}, B);
    return;
  }
  int64_t total = 0;
  for (int64_t c : cost) total += c;
  // Block k starts at the first row whose cost before it reaches k / parts of the total.
  std::vector<int64_t> start(static_cast<size_t>(parts) + 1, B);
  start[0] = 0;
  int64_t before = 0;
  size_t k = 1;
  for (int64_t b = 0; b < B; ++b) {
    while (k < static_cast<size_t>(parts) && before * parts >= total * static_cast<int64_t>(k)) start[k++] = b;
    before += cost[static_cast<size_t>(b)];
  }
#pragma omp parallel for schedule(static) num_threads(std::min(parts, num_threads()))
  for (int part = 0; part < parts; ++part) {
    const auto t = static_cast<size_t>(part);
    if (start[t + 1] > start[t]) rows(start[t], start[t + 1]);
  }
}

}  // namespace attn

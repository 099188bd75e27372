// Internal to the basic ops: one loop skeleton for "read K strided operands, write one
// contiguous output" (broadcasting add/mul, permute). An operand is described by its stride
// in every output dimension (0 where it is broadcast); dimensions of size 1 are dropped and
// neighbours that step through memory as one are merged, so [B, T, D] + [D] becomes a
// [B*T, D] loop and a same-shape add becomes one flat loop. The kernel is called once per
// contiguous run of the innermost dimension, never per element.
#pragma once
#include "attn/core/threading.hpp"
#include <algorithm>
#include <cstdint>
#include <string>

#include "attn/core/error.hpp"
#include "attn/core/tensor.hpp"

namespace attn::ops::detail {

inline constexpr int64_t kParallelElems = kParallelMinElements;   // core/threading.hpp
// The most dimensions an elementwise op handles (after merging, usually 1–3 remain).
inline constexpr int kMaxRank = 12;

template <int K>
struct StridedLayout {
  int rank = 0;                        // number of (merged) output dimensions
  int64_t size[kMaxRank] = {};         // output sizes, outermost first
  int64_t stride[K][kMaxRank] = {};    // operand k's stride (in elements) along each dimension

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= size[d];
    return n;
  }

  // Drops size-1 dimensions and merges neighbours d, d+1 whose strides satisfy
  // stride[d] == stride[d+1] * size[d+1] for every operand (they then walk memory as one).
  void coalesce() {
    int out = 0;
    for (int d = 0; d < rank; ++d) {
      if (size[d] == 1) continue;
      bool merge = out > 0;
      for (int k = 0; k < K && merge; ++k)
        merge = stride[k][out - 1] == stride[k][d] * size[d];
      if (merge) {
        size[out - 1] *= size[d];
        for (int k = 0; k < K; ++k) stride[k][out - 1] = stride[k][d];
      } else {
        size[out] = size[d];
        for (int k = 0; k < K; ++k) stride[k][out] = stride[k][d];
        ++out;
      }
    }
    rank = out;
    if (rank == 0) {   // a single element: one dimension of size 1
      rank = 1;
      size[0] = 1;
      for (int k = 0; k < K; ++k) stride[k][0] = 0;
    }
  }

  // Operand offsets of the first element of output row `row` (rows enumerate every
  // dimension but the innermost, in row-major order).
  void row_offsets(int64_t row, int64_t off[K]) const {
    for (int k = 0; k < K; ++k) off[k] = 0;
    for (int d = rank - 2; d >= 0; --d) {
      const int64_t i = row % size[d];
      row /= size[d];
      for (int k = 0; k < K; ++k) off[k] += i * stride[k][d];
    }
  }
};

// Calls run(off, out_begin, len) for every contiguous run of the innermost output
// dimension: operand k's run starts at off[k] and steps by layout.stride[k][rank-1], the
// output run is [out_begin, out_begin + len). Runs are disjoint in the output, so large
// loops are spread over threads; a long innermost dimension is cut into blocks so that a
// flat loop parallelises too.
template <int K, class Run>
void for_each_run(const StridedLayout<K>& layout, Run&& run) {
  const int64_t total = layout.numel();
  if (total == 0) return;
  const int64_t inner = layout.size[layout.rank - 1];
  const int64_t rows = total / inner;
  constexpr int64_t kBlock = 1 << 14;
  const int64_t block = rows >= 16 ? inner : std::min(inner, kBlock);
  const int64_t blocks = (inner + block - 1) / block;
  const int64_t tasks = rows * blocks;
#pragma omp parallel for schedule(static) if (total >= kParallelElems)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t row = t / blocks, begin = (t % blocks) * block;
    int64_t off[K];
    layout.row_offsets(row, off);
    for (int k = 0; k < K; ++k) off[k] += begin * layout.stride[k][layout.rank - 1];
    run(off, row * inner + begin, std::min(block, inner - begin));
  }
}

// Row-major strides of a shape.
inline void contiguous_strides(const Shape& shape, int64_t* strides) {
  int64_t s = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= shape[d];
  }
}

inline void check_rank_supported(const Shape& shape, const std::string& label) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    throw ShapeError(label + " has rank " + std::to_string(shape.size()) + " (shape " +
                     to_string(shape) + "); at most " + std::to_string(kMaxRank) +
                     " dimensions are supported");
}

}  // namespace attn::ops::detail

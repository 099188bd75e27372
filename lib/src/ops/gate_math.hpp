// Private to the ops layer: the gate nonlinearities of the recurrent cells' fused passes.
//
// tanh is ops::tanh_fast (ops/activation.hpp: Eigen's rational interpolant, within 7 ulps and,
// since it vectorises, several times faster than libm's tanhf, which otherwise dominates an LSTM
// step at hidden sizes of a few hundred). The sigmoid is ops::sigmoid_fast (ops/activation.hpp:
// the polynomial exp_approx of ops/softmax.hpp, 2 ulp, which vectorises where expf does not).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "attn/blas/blas.hpp"
#include "attn/core/team.hpp"
#include "attn/core/tensor.hpp"
#include "attn/core/threading.hpp"
#include "attn/ops/activation.hpp"
#include "attn/ops/softmax.hpp"

namespace attn::ops::detail {

// Below this many [B, H] elements a cell's elementwise pass is not worth waking the threads for.
// At 2^14 the captioner's decoder cell (B = 32, H = 128: 2^12) ran its passes on one thread
// between two-thread GEMMs, and its recurrence at 2 threads came closer to the sgemm rate of its
// products with the passes split (experiments/perf/caption, "The first layer fused with its
// pooling, and attnlab at its default thread wait").
inline constexpr int64_t kCellParallelMin = int64_t{1} << 12;

// The threads for a cell's step over B rows of H units whose products have the given parts:
// one inside a parallel region (the NTM's row blocks), where the products have one part too.
inline int step_threads(int64_t B, int64_t H, std::initializer_list<int> product_parts) {
  if (in_parallel_region()) return 1;
  int parts = B * H >= kCellParallelMin ? num_parts() : 1;
  for (int p : product_parts) parts = std::max(parts, p);
  return std::min(parts, num_threads());
}

// A cell's step forward in one parallel region (core/team.hpp): `product` (the recurrent one,
// split as blas::gemm splits it), then, once all of it is in, row(b) for every batch row b
// (the fused elementwise pass). One region and a spin barrier instead of two regions.
template <class Row>
void product_then_rows(const blas::SplitGemm& product, int64_t B, int64_t H, const Row& row) {
  run_team(step_threads(B, H, {product.parts()}), [&](const Team& team) {
    team.each_part(product.parts(), [&](int part) { product.run(part); });
    team.sync();
    const auto [b0, b1] = team.share(B);
    for (int64_t b = b0; b < b1; ++b) row(b);
  });
}

// A cell's step backward in one parallel region: row(b) for every batch row b, then, once all
// rows are done, the two products that read their gradients (dh's and W_hh's).
template <class Row>
void rows_then_products(int64_t B, int64_t H, const Row& row, const blas::SplitGemm& first,
                        const blas::SplitGemm& second) {
  run_team(step_threads(B, H, {first.parts(), second.parts()}), [&](const Team& team) {
    const auto [b0, b1] = team.share(B);
    for (int64_t b = b0; b < b1; ++b) row(b);
    team.sync();
    team.each_part(first.parts(), [&](int part) { first.run(part); });
    team.each_part(second.parts(), [&](int part) { second.run(part); });
  });
}

using ops::sigmoid_fast;
using ops::tanh_fast;

// out[j] += sum_r d[r, j] over `rows` rows of width `cols` (bias gradients of the cells).
inline void add_column_sums(int64_t rows, int64_t cols, const float* d, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) out[j] += d[r * cols + j];
}

// The data of an optional tensor (undefined means zeros), or nullptr.
inline const float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

}  // namespace attn::ops::detail

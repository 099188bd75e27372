// Ops that move data without arithmetic: concat and slice along an axis, permute (and its
// two-axis case, transpose) and reshape. concat, slice and permute copy into a new
// contiguous tensor, since a Tensor is always contiguous; reshape is a view that shares
// storage. Forwards accept float32 and int32 (token ids are sliced and concatenated too);
// backwards are float32. Axes may be negative (counted from the end). Their caches hold
// shapes only, never tensors.
#pragma once
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn::ops {

// y = [x_0, x_1, ...] joined along `axis`.
//   x_i: [d_0, ..., n_i, ..., d_r]   ->   y: [d_0, ..., sum n_i, ..., d_r]
// All inputs share rank, dtype and every other dimension.
struct ConcatCache {
  int axis = 0;                 // normalised (non-negative)
  std::vector<Shape> shapes;    // of the inputs, in order
};
Tensor concat_forward(const std::vector<Tensor>& xs, int axis, ConcatCache* cache);
// dy: [..., sum n_i, ...]. Returns new dx_i, the slices of dy, one per input.
std::vector<Tensor> concat_backward(const Tensor& dy, const ConcatCache& cache);

// y = x[..., begin:end, ...] along `axis`, 0 <= begin <= end <= x.dim(axis), copied.
//   x: [..., n, ...]   ->   y: [..., end - begin, ...]
struct SliceCache {
  Shape x_shape;
  int axis = 0;                 // normalised (non-negative)
  int64_t begin = 0;
};
Tensor slice_forward(const Tensor& x, int axis, int64_t begin, int64_t end, SliceCache* cache);
// dy: [..., end - begin, ...]. Returns new dx of x's shape: dy in [begin, end), zeros elsewhere.
Tensor slice_backward(const Tensor& dy, const SliceCache& cache);

// y = x with its axes reordered: y.shape[i] = x.shape[perm[i]], y[..j_i..] = x[..j at perm..].
//   e.g. perm {0, 2, 1, 3}: [B, T, NH, HD] -> [B, NH, T, HD].
// perm must be a permutation of 0..rank-1 (negative entries count from the end).
struct PermuteCache { std::vector<int> perm; };   // normalised (non-negative)
Tensor permute_forward(const Tensor& x, const std::vector<int>& perm, PermuteCache* cache);
// dy: [x.shape[perm[i]]...]. Returns new dx = dy permuted by the inverse permutation.
Tensor permute_backward(const Tensor& dy, const PermuteCache& cache);

// Swaps two axes: permute_forward with the identity permutation but axis0 <-> axis1.
Tensor transpose_forward(const Tensor& x, int axis0, int axis1, PermuteCache* cache);
inline Tensor transpose_backward(const Tensor& dy, const PermuteCache& cache) {
  return permute_backward(dy, cache);
}

// y = x viewed under `shape` (same element count; one dimension may be kAny). A view: y shares
// x's storage.
struct ReshapeCache { Shape x_shape; };
Tensor reshape_forward(const Tensor& x, const Shape& shape, ReshapeCache* cache);
// Returns dy viewed under x's shape (a view of dy, shares its storage).
Tensor reshape_backward(const Tensor& dy, const ReshapeCache& cache);

}  // namespace attn::ops

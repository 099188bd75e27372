// concat, slice, permute and reshape. concat and slice view every tensor as
// [outer, n, inner] around the axis, so each is a loop of `outer` memcpy calls of whole
// [n, inner] blocks. permute merges axes that stay adjacent, then copies contiguous runs when
// the innermost axis stays innermost, transposes in cache-sized tiles when the last two
// (merged) axes swap, and falls back to a strided gather otherwise.
#include "attn/ops/shape_ops.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "strided_loop.hpp"

namespace attn::ops {
namespace {

using detail::kParallelElems;
constexpr int64_t kElem = 4;   // bytes per element, float32 and int32 alike

const char* bytes(const Tensor& t) {
  return t.dtype() == DType::f32 ? reinterpret_cast<const char*>(t.data())
                                 : reinterpret_cast<const char*>(t.idata());
}
char* bytes(Tensor& t) {
  return t.dtype() == DType::f32 ? reinterpret_cast<char*>(t.data())
                                 : reinterpret_cast<char*>(t.idata());
}

int normalise_axis(int axis, int rank, const std::string& label, const Shape& shape) {
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw ShapeError(label + ": axis " + std::to_string(axis) + " is out of range for shape " +
                     to_string(shape));
  return a;
}

int64_t product(const Shape& s, int begin, int end) {
  int64_t p = 1;
  for (int d = begin; d < end; ++d) p *= s[d];
  return p;
}

// For o < outer: copy `run` elements from src + o * src_row to dst + o * dst_row.
void copy_rows(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t outer,
               int64_t run) {
  if (run == 0 || outer == 0) return;
#pragma omp parallel for schedule(static) if (outer * run >= kParallelElems && outer > 1)
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * dst_row * kElem, src + o * src_row * kElem, run * kElem);
}

// y (contiguous) = x gathered through `layout` (operand 0: x's stride along each output axis).
template <class T>
void gather(const T* x, T* y, const detail::StridedLayout<1>& layout) {
  const int r = layout.rank;
  const int64_t s_last = layout.stride[0][r - 1];
  if (s_last == 1) {   // innermost axis unmoved: copy whole runs
    detail::for_each_run(layout, [&](const int64_t* off, int64_t out, int64_t n) {
      std::memcpy(y + out, x + off[0], n * sizeof(T));
    });
    return;
  }
  if (r >= 2 && layout.stride[0][r - 2] == 1) {
    // The last two axes swap: per batch item, y[rows, cols] = x[cols, rows]^T (R rows, C
    // columns) with x's rows s_last apart.
    // Tiles of 32 x 32 keep both the reads and the writes within cache lines.
    constexpr int64_t kTile = 32;
    const int64_t R = layout.size[r - 2], C = layout.size[r - 1];
    const int64_t items = layout.numel() / (R * C);
    const int64_t row_tiles = (R + kTile - 1) / kTile;
    detail::StridedLayout<1> outer = layout;   // batch offsets: rows of a [items, rows*cols] view
    outer.rank = r - 1;
    outer.size[r - 2] = 1;
#pragma omp parallel for schedule(static) if (layout.numel() >= kParallelElems)
    for (int64_t t = 0; t < items * row_tiles; ++t) {
      const int64_t item = t / row_tiles, r0 = (t % row_tiles) * kTile, r1 = std::min(R, r0 + kTile);
      int64_t off;
      outer.row_offsets(item, &off);
      const T* xb = x + off;
      T* yb = y + item * R * C;
      for (int64_t c0 = 0; c0 < C; c0 += kTile) {
        const int64_t c1 = std::min(C, c0 + kTile);
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = c0; j < c1; ++j) yb[i * C + j] = xb[i + j * s_last];
      }
    }
    return;
  }
  detail::for_each_run(layout, [&](const int64_t* off, int64_t out, int64_t n) {
    const T* src = x + off[0];
    for (int64_t i = 0; i < n; ++i) y[out + i] = src[i * s_last];
  });
}

Tensor permute_impl(const Tensor& x, const std::vector<int>& perm, const std::string& label) {
  const int r = x.rank();
  detail::check_rank_supported(x.shape(), label + ": x");
  int64_t x_strides[detail::kMaxRank];
  detail::contiguous_strides(x.shape(), x_strides);
  Shape y_shape(r);
  detail::StridedLayout<1> layout;
  layout.rank = r;
  for (int i = 0; i < r; ++i) {
    y_shape[i] = x.shape()[perm[i]];
    layout.size[i] = y_shape[i];
    layout.stride[0][i] = x_strides[perm[i]];
  }
  layout.coalesce();
  Tensor y(y_shape, x.dtype());
  if (y.empty()) return y;
  if (x.dtype() == DType::f32)
    gather(x.data(), y.data(), layout);
  else
    gather(x.idata(), y.idata(), layout);
  return y;
}

}  // namespace

Tensor concat_forward(const std::vector<Tensor>& xs, int axis, ConcatCache* cache) {
  if (xs.empty()) throw ShapeError("concat: no input tensors");
  const Shape& first = xs[0].shape();
  const int r = xs[0].rank();
  const int a = normalise_axis(axis, r, "concat", first);
  Shape want = first;
  want[a] = kAny;
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    check_tensor(xs[i], want, "concat: input " + std::to_string(i) + " (along axis " +
                                  std::to_string(a) + ")", xs[0].dtype());
    total += xs[i].dim(a);
  }
  Shape y_shape = first;
  y_shape[a] = total;
  Tensor y(y_shape, xs[0].dtype());
  const int64_t outer = product(first, 0, a), inner = product(first, a + 1, r);
  int64_t at = 0;   // elements into each output row
  for (const Tensor& x : xs) {
    const int64_t run = x.dim(a) * inner;
    copy_rows(bytes(x), run, bytes(y) + at * kElem, total * inner, outer, run);
    at += run;
  }
  if (cache) {
    cache->axis = a;
    cache->shapes.clear();
    for (const Tensor& x : xs) cache->shapes.push_back(x.shape());
  }
  return y;
}

std::vector<Tensor> concat_backward(const Tensor& dy, const ConcatCache& cache) {
  if (cache.shapes.empty()) throw ShapeError("concat_backward: the cache holds no inputs");
  Shape want = cache.shapes[0];
  const int a = cache.axis;
  want[a] = 0;
  for (const Shape& s : cache.shapes) want[a] += s[a];
  check_tensor(dy, want, "concat_backward: dy");
  const int r = static_cast<int>(want.size());
  const int64_t outer = product(want, 0, a), inner = product(want, a + 1, r);
  std::vector<Tensor> dxs;
  dxs.reserve(cache.shapes.size());
  int64_t at = 0;
  for (const Shape& s : cache.shapes) {
    Tensor dx(s);
    const int64_t run = s[a] * inner;
    copy_rows(bytes(dy) + at * kElem, want[a] * inner, bytes(dx), run, outer, run);
    at += run;
    dxs.push_back(std::move(dx));
  }
  return dxs;
}

Tensor slice_forward(const Tensor& x, int axis, int64_t begin, int64_t end, SliceCache* cache) {
  const int r = x.rank();
  const int a = normalise_axis(axis, r, "slice", x.shape());
  const int64_t n = x.dim(a);
  if (begin < 0 || end < begin || end > n)
    throw ShapeError("slice: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") is out of bounds for axis " + std::to_string(a) + " of size " +
                     std::to_string(n) + " (x has shape " + to_string(x.shape()) + ")");
  Shape y_shape = x.shape();
  y_shape[a] = end - begin;
  Tensor y(y_shape, x.dtype());
  const int64_t outer = product(x.shape(), 0, a), inner = product(x.shape(), a + 1, r);
  copy_rows(bytes(x) + begin * inner * kElem, n * inner, bytes(y), (end - begin) * inner, outer,
            (end - begin) * inner);
  if (cache) *cache = {x.shape(), a, begin};
  return y;
}

Tensor slice_backward(const Tensor& dy, const SliceCache& cache) {
  const Shape& xs = cache.x_shape;
  const int a = cache.axis, r = static_cast<int>(xs.size());
  Shape want = xs;
  want[a] = kAny;
  check_tensor(dy, want, "slice_backward: dy");
  const int64_t len = dy.dim(a);
  if (cache.begin + len > xs[a])
    throw ShapeError("slice_backward: dy has " + std::to_string(len) + " entries along axis " +
                     std::to_string(a) + " from " + std::to_string(cache.begin) +
                     ", past the size " + std::to_string(xs[a]) + " of x");
  Tensor dx(xs);
  const int64_t outer = product(xs, 0, a), inner = product(xs, a + 1, r);
  copy_rows(bytes(dy), len * inner, bytes(dx) + cache.begin * inner * kElem, xs[a] * inner, outer,
            len * inner);
  return dx;
}

Tensor permute_forward(const Tensor& x, const std::vector<int>& perm, PermuteCache* cache) {
  const int r = x.rank();
  if (static_cast<int>(perm.size()) != r)
    throw ShapeError("permute: perm has " + std::to_string(perm.size()) +
                     " entries for x of shape " + to_string(x.shape()) + " (rank " +
                     std::to_string(r) + ")");
  std::vector<int> p(r);
  std::vector<bool> seen(r, false);
  for (int i = 0; i < r; ++i) {
    p[i] = normalise_axis(perm[i], r, "permute", x.shape());
    if (seen[p[i]]) {
      std::string list;
      for (int v : perm) list += (list.empty() ? "" : ", ") + std::to_string(v);
      throw ShapeError("permute: perm {" + list + "} repeats axis " + std::to_string(p[i]) +
                       "; it must list every axis of x (shape " + to_string(x.shape()) + ") once");
    }
    seen[p[i]] = true;
  }
  Tensor y = permute_impl(x, p, "permute");
  if (cache) cache->perm = std::move(p);
  return y;
}

Tensor permute_backward(const Tensor& dy, const PermuteCache& cache) {
  const int r = static_cast<int>(cache.perm.size());
  if (dy.rank() != r)
    throw ShapeError("permute_backward: dy has shape " + to_string(dy.shape()) + ", expected rank " +
                     std::to_string(r));
  check_tensor(dy, dy.shape(), "permute_backward: dy");
  std::vector<int> inverse(r);
  for (int i = 0; i < r; ++i) inverse[cache.perm[i]] = i;
  return permute_impl(dy, inverse, "permute_backward");
}

Tensor transpose_forward(const Tensor& x, int axis0, int axis1, PermuteCache* cache) {
  const int r = x.rank();
  const int a0 = normalise_axis(axis0, r, "transpose", x.shape());
  const int a1 = normalise_axis(axis1, r, "transpose", x.shape());
  std::vector<int> perm(r);
  for (int i = 0; i < r; ++i) perm[i] = i;
  std::swap(perm[a0], perm[a1]);
  return permute_forward(x, perm, cache);
}

Tensor reshape_forward(const Tensor& x, const Shape& shape, ReshapeCache* cache) {
  Tensor y;
  try {
    y = x.reshape(shape);
  } catch (const ShapeError& e) {
    throw ShapeError(std::string("reshape: ") + e.what());
  }
  if (cache) cache->x_shape = x.shape();
  return y;
}

Tensor reshape_backward(const Tensor& dy, const ReshapeCache& cache) {
  check_tensor(dy, dy.shape(), "reshape_backward: dy");
  if (dy.numel() != numel(cache.x_shape))
    throw ShapeError("reshape_backward: dy has shape " + to_string(dy.shape()) + " (" +
                     std::to_string(dy.numel()) + " elements), expected " +
                     std::to_string(numel(cache.x_shape)) + " elements to view as " +
                     to_string(cache.x_shape));
  return dy.reshape(cache.x_shape);
}

}  // namespace attn::ops

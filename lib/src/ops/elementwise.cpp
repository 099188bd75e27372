// Broadcasting add and mul, sum_to, scale and accumulate. Forward loops go through the strided
// run skeleton (strided_loop.hpp), with the kernel specialised at compile time on whether
// each operand is contiguous or repeated along the innermost dimension, so the inner loops
// are plain vectorisable array loops. sum_to is deterministic: every output element is
// summed over its inputs in index order, whichever thread computes it.
#include "attn/ops/elementwise.hpp"

#include <algorithm>
#include <vector>

#include "strided_loop.hpp"

namespace attn::ops {
namespace {

using detail::kMaxRank;
using detail::kParallelElems;

// Layout for y = a (op) b over the output shape `out`: operand strides are the inputs' own
// row-major strides, 0 along broadcast (size-1 or missing) dimensions.
detail::StridedLayout<2> broadcast_layout(const Shape& a, const Shape& b, const Shape& out) {
  detail::StridedLayout<2> layout;
  const int r = static_cast<int>(out.size());
  layout.rank = r;
  const Shape* in[2] = {&a, &b};
  for (int k = 0; k < 2; ++k) {
    const Shape& s = *in[k];
    const int pad = r - static_cast<int>(s.size());
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; --d) {
      const int64_t n = d >= pad ? s[d - pad] : 1;
      layout.stride[k][d] = n == 1 ? 0 : stride;
      stride *= n;
    }
  }
  for (int d = 0; d < r; ++d) layout.size[d] = out[d];
  layout.coalesce();
  return layout;
}

// y = f(a, b) over a broadcast layout. The four inner loops differ only in which operand
// steps (stride 1) and which repeats one value (stride 0); Op inlines.
template <class Op>
void broadcast_apply(const float* a, const float* b, float* y,
                     const detail::StridedLayout<2>& layout, Op op) {
  const int last = layout.rank - 1;
  const bool a_steps = layout.stride[0][last] != 0, b_steps = layout.stride[1][last] != 0;
  detail::for_each_run(layout, [&](const int64_t* off, int64_t out, int64_t n) {
    const float* pa = a + off[0];
    const float* pb = b + off[1];
    float* py = y + out;
    if (a_steps && b_steps) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) py[i] = op(pa[i], pb[i]);
    } else if (a_steps) {
      const float vb = *pb;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) py[i] = op(pa[i], vb);
    } else if (b_steps) {
      const float va = *pa;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) py[i] = op(va, pb[i]);
    } else {
      std::fill(py, py + n, op(*pa, *pb));
    }
  });
}

template <class Op>
Tensor broadcast_binary(const Tensor& a, const Tensor& b, const char* name, Op op) {
  const std::string label = std::string(name);
  check_tensor(a, a.shape(), label + ": a");
  check_tensor(b, b.shape(), label + ": b");
  const Shape out = broadcast_shape(a.shape(), b.shape(), label);
  Tensor y = Tensor::uninitialized(out);
  broadcast_apply(a.data(), b.data(), y.data(), broadcast_layout(a.shape(), b.shape(), out), op);
  return y;
}

// The dimensions of a sum_to layout split into those kept in the output and those summed.
struct DimSet {
  int n = 0;
  int64_t size[kMaxRank] = {};
  int64_t in[kMaxRank] = {};    // input stride
  int64_t out[kMaxRank] = {};   // output stride (0 for summed dimensions)

  void push(int64_t s, int64_t si, int64_t so) {
    size[n] = s;
    in[n] = si;
    out[n] = so;
    ++n;
  }
  int64_t count() const {
    int64_t c = 1;
    for (int d = 0; d < n; ++d) c *= size[d];
    return c;
  }
  // Input and output offsets of the i-th index (row-major over these dimensions).
  void offsets(int64_t i, int64_t& in_off, int64_t& out_off) const {
    in_off = out_off = 0;
    for (int d = n - 1; d >= 0; --d) {
      const int64_t j = i % size[d];
      i /= size[d];
      in_off += j * in[d];
      out_off += j * out[d];
    }
  }
};

void check_rank(const Shape& shape, const std::string& label) {
  detail::check_rank_supported(shape, label);
}

}  // namespace

Shape broadcast_shape(const Shape& a, const Shape& b, const std::string& label) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {   // i counts from the trailing dimension
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError(label + ": cannot broadcast a " + to_string(a) + " with b " + to_string(b) +
                       ": dimension -" + std::to_string(i + 1) + " is " + std::to_string(da) +
                       " vs " + std::to_string(db) + " (sizes must be equal or 1)");
    out[r - 1 - i] = da == 1 ? db : da;
  }
  check_rank(out, label + ": broadcast result");
  return out;
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  check_tensor(x, x.shape(), "sum_to: x");
  const Shape& xs = x.shape();
  check_rank(xs, "sum_to: x");
  bool ok = shape.size() <= xs.size();
  const int r = static_cast<int>(xs.size()), pad = r - static_cast<int>(shape.size());
  for (int d = pad; ok && d < r; ++d) ok = shape[d - pad] == xs[d] || shape[d - pad] == 1;
  if (!ok)
    throw ShapeError("sum_to: cannot sum x " + to_string(xs) + " to " + to_string(shape) +
                     " (the target must broadcast to x's shape)");
  Tensor y(shape);
  if (x.empty() || y.empty()) return y;

  // Input strides are x's own; output strides are y's, 0 along the summed dimensions.
  detail::StridedLayout<2> layout;
  layout.rank = r;
  detail::contiguous_strides(xs, layout.stride[0]);
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; --d) {
    const int64_t n = d >= pad ? shape[d - pad] : 1;
    layout.size[d] = xs[d];
    layout.stride[1][d] = n == 1 ? 0 : stride;
    stride *= n;
  }
  layout.coalesce();

  const float* px = x.data();
  float* py = y.data();
  const int last = layout.rank - 1;
  const int64_t inner = layout.size[last];
  const int64_t total = x.numel();
  DimSet kept, summed;   // every dimension but the innermost
  for (int d = 0; d < last; ++d)
    (layout.stride[1][d] ? kept : summed).push(layout.size[d], layout.stride[0][d], layout.stride[1][d]);

  if (layout.stride[1][last] != 0) {
    // Innermost dimension kept ([rows, D] -> [D]): each task owns a block of output columns
    // under one kept index and adds the matching input rows into it, in row order.
    constexpr int64_t kBlock = 1024;
    const int64_t n_kept = kept.count(), n_summed = summed.count();
    const int64_t block = n_kept >= 16 ? inner : std::min(inner, kBlock);
    const int64_t blocks = (inner + block - 1) / block;
#pragma omp parallel for schedule(static) if (total >= kParallelElems)
    for (int64_t t = 0; t < n_kept * blocks; ++t) {
      const int64_t k = t / blocks, begin = (t % blocks) * block, n = std::min(block, inner - begin);
      int64_t in_k, out_k, in_s, unused;
      kept.offsets(k, in_k, out_k);
      float* dst = py + out_k + begin;
      for (int64_t s = 0; s < n_summed; ++s) {
        summed.offsets(s, in_s, unused);
        const float* src = px + in_k + in_s + begin;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
      }
    }
  } else {
    // Innermost dimension summed ([rows, D] -> [rows, 1]): one output element per task, a sum of
    // contiguous runs.
    const int64_t n_kept = kept.count(), n_summed = summed.count();
#pragma omp parallel for schedule(static) if (total >= kParallelElems)
    for (int64_t k = 0; k < n_kept; ++k) {
      int64_t in_k, out_k, in_s, unused;
      kept.offsets(k, in_k, out_k);
      double acc = 0;
      for (int64_t s = 0; s < n_summed; ++s) {
        summed.offsets(s, in_s, unused);
        const float* src = px + in_k + in_s;
        float run = 0;
#pragma omp simd reduction(+ : run)
        for (int64_t i = 0; i < inner; ++i) run += src[i];
        acc += run;
      }
      py[out_k] = static_cast<float>(acc);
    }
  }
  return y;
}

Tensor add_forward(const Tensor& a, const Tensor& b, AddCache* cache) {
  Tensor y = broadcast_binary(a, b, "add", [](float u, float v) { return u + v; });
  if (cache) *cache = {a.shape(), b.shape()};
  return y;
}

AddGrads add_backward(const Tensor& dy, const AddCache& cache) {
  check_tensor(dy, broadcast_shape(cache.a_shape, cache.b_shape, "add_backward"),
               "add_backward: dy [broadcast shape]");
  return {sum_to(dy, cache.a_shape), sum_to(dy, cache.b_shape)};
}

Tensor mul_forward(const Tensor& a, const Tensor& b, MulCache* cache) {
  Tensor y = broadcast_binary(a, b, "mul", [](float u, float v) { return u * v; });
  if (cache) *cache = {a, b};
  return y;
}

MulGrads mul_backward(const Tensor& dy, const MulCache& cache) {
  const Shape out = broadcast_shape(cache.a.shape(), cache.b.shape(), "mul_backward");
  check_tensor(dy, out, "mul_backward: dy [broadcast shape]");
  const auto times = [](float u, float v) { return u * v; };
  // dy * b has the output shape; sum it back over a's broadcast dimensions (and vice versa).
  const auto grad_for = [&](const Tensor& other, const Shape& own) {
    Tensor g(out);
    broadcast_apply(dy.data(), other.data(), g.data(), broadcast_layout(out, other.shape(), out), times);
    return own == out ? g : sum_to(g, own);
  };
  return {grad_for(cache.b, cache.a.shape()), grad_for(cache.a, cache.b.shape())};
}

Tensor scale_forward(const Tensor& x, float alpha) {
  check_tensor(x, x.shape(), "scale: x");
  Tensor y = Tensor::uninitialized(x.shape());
  const float* px = x.data();
  float* py = y.data();
  const int64_t n = x.numel();
#pragma omp parallel for simd schedule(static) if (n >= kParallelElems)
  for (int64_t i = 0; i < n; ++i) py[i] = alpha * px[i];
  return y;
}

Tensor scale_backward(const Tensor& dy, float alpha) { return scale_forward(dy, alpha); }

void accumulate(Tensor& dst, const Tensor& src, float alpha) {
  check_tensor(dst, dst.shape(), "accumulate: dst");
  check_tensor(src, dst.shape(), "accumulate: src");
  const float* ps = src.data();
  float* pd = dst.data();
  const int64_t n = dst.numel();
#pragma omp parallel for simd schedule(static) if (n >= kParallelElems)
  for (int64_t i = 0; i < n; ++i) pd[i] += alpha * ps[i];
}

}  // namespace attn::ops

// nn::MultiHeadAttention: projections as whole-batch GEMMs, head split fused with the bias,
// the fused attention core, and the mirrored backward with aliased-input folding.
#include "attn/nn/multi_head_attention.hpp"

#include "attn/nn/init.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/blas/blas.hpp"
#include "attn/core/threading.hpp"

namespace attn::nn {
namespace {

using blas::Trans;

// x [B*T, D] (rows (b, t); T the projected positions, queries or keys) + bias [D] -> heads
// [B, NH, T, HD]. bias may be null.
Tensor split_heads(const float* x, const float* bias, int64_t B, int64_t L, int64_t NH, int64_t HD) {
  Tensor out = Tensor::uninitialized({B, NH, L, HD});
  float* o = out.data();
  const int64_t D = NH * HD;
#pragma omp parallel for schedule(static) if (B * L * D >= kParallelMinElements)
  for (int64_t bl = 0; bl < B * L; ++bl) {
    const int64_t b = bl / L, l = bl % L;
    const float* row = x + bl * D;
    for (int64_t h = 0; h < NH; ++h) {
      float* dst = o + ((b * NH + h) * L + l) * HD;
      const float* src = row + h * HD;
      if (bias != nullptr)
        for (int64_t c = 0; c < HD; ++c) dst[c] = src[c] + bias[h * HD + c];
      else
        for (int64_t c = 0; c < HD; ++c) dst[c] = src[c];
    }
  }
  return out;
}

// heads [B, NH, T, HD] -> [B, T, D]
Tensor merge_heads(const Tensor& heads) {
  const int64_t B = heads.dim(0), NH = heads.dim(1), L = heads.dim(2), HD = heads.dim(3);
  Tensor out = Tensor::uninitialized({B, L, NH * HD});
  const float* x = heads.data();
  float* o = out.data();
#pragma omp parallel for schedule(static) if (B * L * NH * HD >= kParallelMinElements)
  for (int64_t bl = 0; bl < B * L; ++bl) {
    const int64_t b = bl / L, l = bl % L;
    for (int64_t h = 0; h < NH; ++h) {
      const float* src = x + ((b * NH + h) * L + l) * HD;
      std::copy(src, src + HD, o + bl * NH * HD + h * HD);
    }
  }
  return out;
}

// out[c] += sum_r x[r, c]. Rows are summed in fixed blocks (each serially, then the blocks in
// order), so the blocks can run on all threads and the result does not depend on their number.
void add_column_sums(const float* x, int64_t rows, int64_t cols, float* out) {
  constexpr int64_t kBlockRows = 128;
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  std::vector<float> partial(static_cast<size_t>(blocks * cols), 0.0f);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMinElements)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    float* p = partial.data() + blk * cols;
    for (int64_t r = blk * kBlockRows; r < std::min(rows, (blk + 1) * kBlockRows); ++r) {
      const float* row = x + r * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) p[c] += row[c];
    }
  }
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (int64_t c = 0; c < cols; ++c) out[c] += partial[static_cast<size_t>(blk * cols + c)];
}

// y = x W^T + b, split into heads. x: [B, T, D] -> [B, NH, T, HD] (keys and values: S for T)
Tensor project(const Tensor& x, const Param& w, const Param& b, int64_t NH) {
  const int64_t B = x.dim(0), L = x.dim(1), D = x.dim(2);
  Tensor y = Tensor::uninitialized({B * L, D});
  blas::gemm(Trans::N, Trans::T, B * L, D, D, 1.0f, x.data(), D, w.value.data(), D, 0.0f, y.data(), D);
  return split_heads(y.data(), b.value.data(), B, L, NH, D / NH);
}

// Backward of `project`: dheads [B, NH, T, HD] -> db += colsum, dW += dY^T x, and
// dx (= or += when accumulate) dY W.
void project_backward(const Tensor& dheads, const Tensor& x, Param& w, Param& b, Tensor& dx,
                      bool accumulate) {
  const int64_t B = x.dim(0), L = x.dim(1), D = x.dim(2);
  const Tensor dy = merge_heads(dheads);
  add_column_sums(dy.data(), B * L, D, b.grad.data());
  blas::gemm(Trans::T, Trans::N, D, D, B * L, 1.0f, dy.data(), D, x.data(), D, 1.0f, w.grad.data(), D);
  blas::gemm(Trans::N, Trans::N, B * L, D, D, 1.0f, dy.data(), D, w.value.data(), D, accumulate ? 1.0f : 0.0f,
             dx.data(), D);
}

// out = context W_o^T + b_o: start from the bias rows, then one GEMM with beta = 1.
// context: [B, T, D] -> [B, T, D]
Tensor output_projection(const Tensor& context, const Param& w, const Param& b) {
  const int64_t BT = context.dim(0) * context.dim(1), D = context.dim(2);
  Tensor out = Tensor::uninitialized(context.shape());
  float* o = out.data();
  const float* pb = b.value.data();
#pragma omp parallel for schedule(static) if (BT * D >= kParallelMinElements)
  for (int64_t r = 0; r < BT; ++r) std::copy(pb, pb + D, o + r * D);
  blas::gemm(Trans::N, Trans::T, BT, D, D, 1.0f, context.data(), D, w.value.data(), D, 1.0f, o, D);
  return out;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t d_model, int64_t heads, const std::string& name, Rng& rng)
    : d_model_(d_model), heads_(heads) {
  if (d_model < 1 || heads < 1)
    throw ConfigError("multi-head attention: d_model and heads must be >= 1, got d_model " +
                      std::to_string(d_model) + ", heads " + std::to_string(heads));
  if (d_model % heads != 0)
    throw ConfigError("multi-head attention: d_model " + std::to_string(d_model) +
                      " is not divisible by heads " + std::to_string(heads) +
                      " (the head width HD = d_model / heads must be whole)");
  Param* weights[] = {&w_q, &w_k, &w_v, &w_o};
  Param* biases[] = {&b_q, &b_k, &b_v, &b_o};
  const char* suffix[] = {"q", "k", "v", "o"};
  for (int i = 0; i < 4; ++i) {
    *weights[i] = Param(name + "/w_" + suffix[i], glorot_uniform({d_model, d_model}, rng));
    *biases[i] = Param(name + "/b_" + suffix[i], Tensor({d_model}));
  }
}

ParamList MultiHeadAttention::params() {
  return {&w_q, &w_k, &w_v, &w_o, &b_q, &b_k, &b_v, &b_o};
}

Tensor MultiHeadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const ops::AttentionMask& mask, MultiHeadAttentionCache* cache,
                                   Tensor* weights, const ops::AttentionOptions& options) const {
  const int64_t D = d_model_, NH = heads_, HD = D / NH;
  check_tensor(query, {kAny, kAny, D}, "multi-head attention: query [B, T, D]");
  const int64_t B = query.dim(0);
  check_tensor(key, {B, kAny, D}, "multi-head attention: key [B, S, D]");
  check_tensor(value, key.shape(), "multi-head attention: value [B, S, D]");

  const Tensor q = project(query, w_q, b_q, NH);
  const Tensor k = project(key, w_k, b_k, NH);
  const Tensor v = project(value, w_v, b_v, NH);
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
  const Tensor heads =
      ops::attention_forward(q, k, v, scale, mask, cache ? &cache->core : nullptr, weights, options);
  const Tensor context = merge_heads(heads);   // [B, T, D]
  const Tensor out = output_projection(context, w_o, b_o);
  if (cache != nullptr) {
    cache->query = query;
    cache->key = key;
    cache->value = value;
    cache->key_is_query = key.is_same(query);
    cache->value_is_query = value.is_same(query);
    cache->value_is_key = value.is_same(key);
    cache->context = context;
  }
  return out;
}

MultiHeadAttentionGrads MultiHeadAttention::backward(const Tensor& dout,
                                                     const MultiHeadAttentionCache& cache) {
  const int64_t D = d_model_, NH = heads_;
  const Tensor& query = cache.query;
  const int64_t B = query.dim(0), T = query.dim(1);
  check_tensor(dout, {B, T, D}, "multi-head attention backward: dout [B, T, D]");
  // out = context W_o^T + b_o
  add_column_sums(dout.data(), B * T, D, b_o.grad.data());
  blas::gemm(Trans::T, Trans::N, D, D, B * T, 1.0f, dout.data(), D, cache.context.data(), D, 1.0f,
             w_o.grad.data(), D);
  Tensor dcontext = Tensor::uninitialized({B * T, D});
  blas::gemm(Trans::N, Trans::N, B * T, D, D, 1.0f, dout.data(), D, w_o.value.data(), D, 0.0f,
             dcontext.data(), D);
  const Tensor dheads = split_heads(dcontext.data(), nullptr, B, T, NH, D / NH);
  const ops::AttentionGrads g = ops::attention_backward(dheads, cache.core);

  MultiHeadAttentionGrads out;
  out.dquery = Tensor::uninitialized(query.shape());   // project_backward overwrites (beta = 0)
  project_backward(g.dq, query, w_q, b_q, out.dquery, /*accumulate=*/false);
  if (cache.key_is_query) {
    project_backward(g.dk, cache.key, w_k, b_k, out.dquery, /*accumulate=*/true);
  } else {
    out.dkey = Tensor::uninitialized(cache.key.shape());
    project_backward(g.dk, cache.key, w_k, b_k, out.dkey, /*accumulate=*/false);
  }
  if (cache.value_is_query) {
    project_backward(g.dv, cache.value, w_v, b_v, out.dquery, /*accumulate=*/true);
  } else if (cache.value_is_key) {
    project_backward(g.dv, cache.value, w_v, b_v, out.dkey, /*accumulate=*/true);
  } else {
    out.dvalue = Tensor::uninitialized(cache.value.shape());
    project_backward(g.dv, cache.value, w_v, b_v, out.dvalue, /*accumulate=*/false);
  }
  return out;
}

KVCache MultiHeadAttention::new_kv_cache(int64_t batch, int64_t capacity) const {
  if (batch < 1 || capacity < 1)
    throw ConfigError("multi-head attention: a KV cache needs batch >= 1 and capacity >= 1, got " +
                      std::to_string(batch) + " and " + std::to_string(capacity));
  const int64_t HD = d_model_ / heads_;
  return {Tensor({batch, heads_, capacity, HD}), Tensor({batch, heads_, capacity, HD}), 0};
}

void MultiHeadAttention::append_kv(const Tensor& key, const Tensor& value, KVCache& cache) const {
  const int64_t NH = heads_, HD = d_model_ / heads_, cap = cache.capacity();
  const int64_t B = cache.k.dim(0);
  check_tensor(key, {B, kAny, d_model_}, "multi-head attention: cached key [B, Tn, D]");
  check_tensor(value, key.shape(), "multi-head attention: cached value [B, Tn, D]");
  const int64_t Tn = key.dim(1);
  if (cache.length + Tn > cap)
    throw ShapeError("multi-head attention: KV cache holds " + std::to_string(cache.length) + " of " +
                     std::to_string(cap) + " positions, no room for " + std::to_string(Tn) + " more");
  const Tensor k = project(key, w_k, b_k, NH), v = project(value, w_v, b_v, NH);   // [B, NH, Tn, HD]
  for (int64_t bh = 0; bh < B * NH; ++bh) {
    const int64_t dst = (bh * cap + cache.length) * HD, src = bh * Tn * HD;
    std::copy(k.data() + src, k.data() + src + Tn * HD, cache.k.data() + dst);
    std::copy(v.data() + src, v.data() + src + Tn * HD, cache.v.data() + dst);
  }
  cache.length += Tn;
}

Tensor MultiHeadAttention::forward_cached(const Tensor& query, const KVCache& cache,
                                          const ops::AttentionMask& mask, Tensor* weights) const {
  const int64_t D = d_model_, NH = heads_, HD = D / NH, cap = cache.capacity(), S = cache.length;
  const int64_t B = cache.k.dim(0);
  check_tensor(query, {B, kAny, D}, "multi-head attention: query [B, T, D]");
  const int64_t T = query.dim(1), BH = B * NH;
  if (S == 0)
    throw ShapeError("multi-head attention: forward_cached on an empty KV cache (call append_kv first)");
  const Tensor q = project(query, w_q, b_q, NH);
  // The cached heads are [capacity, HD] blocks: the batched GEMMs stride over them directly.
  Tensor P({B, NH, T, S});
  blas::gemm_strided_batched(Trans::N, Trans::T, T, S, HD, 1.0f / std::sqrt(static_cast<float>(HD)), q.data(),
                             HD, T * HD, cache.k.data(), HD, cap * HD, 0.0f, P.data(), S, T * S, BH);
  ops::masked_softmax_inplace(P, mask);
  Tensor heads({B, NH, T, HD});
  blas::gemm_strided_batched(Trans::N, Trans::N, T, HD, S, 1.0f, P.data(), S, T * S, cache.v.data(), HD,
                             cap * HD, 0.0f, heads.data(), HD, T * HD, BH);
  if (weights != nullptr) *weights = P;
  return output_projection(merge_heads(heads), w_o, b_o);
}

}  // namespace attn::nn

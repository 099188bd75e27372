// The attention core: mask validation, the masked row softmax, and the materialised and
// streaming (online-softmax, block-skipping) forward and backward passes.
#include "attn/ops/attention_core.hpp"
#include "attn/ops/softmax.hpp"   // exp_approx: the vectorisable exp

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attn/blas/blas.hpp"
#include "attn/core/flops.hpp"
#include "attn/core/threading.hpp"
#include "vector_clones.hpp"

namespace attn::ops {
namespace {

using blas::Trans;
constexpr float kInf = std::numeric_limits<float>::infinity();

// Parallel loops over rows only pay past this many elements, and the streaming tasks past this
// many multiply-adds: below that, waking the second thread costs more than the work (and on a
// busy machine much more, since every parallel region waits for all its threads to be scheduled).
constexpr int64_t kParallelElems = 1 << 14;
constexpr int64_t kParallelWork = 1 << 16;

const int32_t* lengths_of(const AttentionMask& mask) {
  return mask.key_lengths.defined() && !mask.key_lengths.empty() ? mask.key_lengths.idata() : nullptr;
}

// Scores of keys the explicit mask hides become -inf, so exp() turns them into exact zeros and
// the hot loops below run branch-free over the row's visible range [lo, hi).
void hide_kept_out(float* x, const RowMask& r, int64_t lo, int64_t hi, int64_t first_key) {
  if (r.keep == nullptr) return;
  for (int64_t j = lo; j < hi; ++j)
    if (r.keep[j] == 0) x[j - first_key] = -kInf;
}

// max of x[0, n), -inf when n = 0. Written as this select, the only form of a float max
// reduction GCC 12 vectorises without -ffast-math (std::max, even under the same pragma,
// stays scalar).
inline float row_max(const float* x, int64_t n) {
  float mx = -kInf;
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < n; ++j) mx = mx > x[j] ? mx : x[j];
  return mx;
}

// x[S] -> softmax over the visible keys of `r`, zeros elsewhere (all zeros if none visible).
ATTN_VECTOR_CLONES
void softmax_row(float* x, int64_t S, const RowMask& r) {
  std::fill(x, x + r.lo, 0.0f);
  std::fill(x + r.hi, x + S, 0.0f);
  hide_kept_out(x, r, r.lo, r.hi, 0);
  const float mx = row_max(x + r.lo, r.hi - r.lo);
  if (mx == -kInf) {   // no visible key (finite scores never reach -inf otherwise)
    std::fill(x + r.lo, x + r.hi, 0.0f);
    return;
  }
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = r.lo; j < r.hi; ++j) {
    x[j] = exp_approx(x[j] - mx);
    sum += x[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = r.lo; j < r.hi; ++j) x[j] *= inv;
}

// dp[S] -> p * (dp - <p, dp>) in place.
ATTN_VECTOR_CLONES
void softmax_backward_row(float* dp, const float* p, int64_t S) {
  float inner = 0.0f;
  for (int64_t j = 0; j < S; ++j) inner += p[j] * dp[j];
  for (int64_t j = 0; j < S; ++j) dp[j] = p[j] * (dp[j] - inner);
}

struct Dims {
  int64_t B, H, T, S, Dk, Dv;
};

Dims check_inputs(const Tensor& q, const Tensor& k, const Tensor& v) {
  check_tensor(q, {kAny, kAny, kAny, kAny}, "attention: q [B, H, T, Dk]");
  const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), Dk = q.dim(3);
  check_tensor(k, {B, H, kAny, Dk}, "attention: k [B, H, S, Dk]");
  const int64_t S = k.dim(2);
  check_tensor(v, {B, H, S, kAny}, "attention: v [B, H, S, Dv]");
  return {B, H, T, S, Dk, v.dim(3)};
}

// The union of the visible ranges of rows [t0, t0 + n) of batch entry b; empty when all are.
std::pair<int64_t, int64_t> block_range(const RowMask* rows, int64_t n) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (int64_t i = 0; i < n; ++i)
    if (rows[i].hi > rows[i].lo) {
      lo = std::min(lo, rows[i].lo);
      hi = std::max(hi, rows[i].hi);
    }
  return lo < hi ? std::pair{lo, hi} : std::pair<int64_t, int64_t>{0, 0};
}

// ---- materialised path ----------------------------------------------------------------------

// One task per head (scores, their softmax, the weighted sum), so a head's weights are still in
// cache when the second product reads them and the threads meet once, not three times.
// When the heads do not balance over the threads, each step runs on all threads in turn instead.
Tensor forward_materialised(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                            const AttentionMask& mask, const Dims& d, Tensor& P) {
  const int64_t BH = d.B * d.H;
  P = Tensor::uninitialized({d.B, d.H, d.T, d.S});   // both products below run with beta = 0
  Tensor out = Tensor::uninitialized({d.B, d.H, d.T, d.Dv});
  if (!tasks_balance(BH, num_parts())) {
    // scores[bh] = scale * q[bh] k[bh]^T : [T, S]
    blas::gemm_strided_batched(Trans::N, Trans::T, d.T, d.S, d.Dk, scale, q.data(), d.Dk, d.T * d.Dk,
                               k.data(), d.Dk, d.S * d.Dk, 0.0f, P.data(), d.S, d.T * d.S, BH);
    masked_softmax_inplace(P, mask);
    // out[bh] = P[bh] v[bh] : [T, Dv]
    blas::gemm_strided_batched(Trans::N, Trans::N, d.T, d.Dv, d.S, 1.0f, P.data(), d.S, d.T * d.S,
                               v.data(), d.Dv, d.S * d.Dv, 0.0f, out.data(), d.Dv, d.T * d.Dv, BH);
    return out;
  }
  const int32_t* lengths = lengths_of(mask);
  const float *qp = q.data(), *kp = k.data(), *vp = v.data();
  float *pp = P.data(), *op = out.data();
#pragma omp parallel for schedule(static) if (BH * d.T * d.S * (d.Dk + d.Dv) >= kParallelWork)
  for (int64_t bh = 0; bh < BH; ++bh) {
    float* ph = pp + bh * d.T * d.S;
    blas::gemm(Trans::N, Trans::T, d.T, d.S, d.Dk, scale, qp + bh * d.T * d.Dk, d.Dk, kp + bh * d.S * d.Dk,
               d.Dk, 0.0f, ph, d.S);
    for (int64_t t = 0; t < d.T; ++t)
      softmax_row(ph + t * d.S, d.S, row_mask(mask, lengths, bh / d.H, t, d.T, d.S));
    blas::gemm(Trans::N, Trans::N, d.T, d.Dv, d.S, 1.0f, ph, d.S, vp + bh * d.S * d.Dv, d.Dv, 0.0f,
               op + bh * d.T * d.Dv, d.Dv);
  }
  return out;
}

AttentionGrads backward_materialised(const Tensor& dout, const AttentionCache& c, const Dims& d) {
  const int64_t BH = d.B * d.H;
  const float* P = c.weights.data();
  // Each written by one product with beta = 0.
  AttentionGrads g{Tensor::uninitialized(c.q.shape()), Tensor::uninitialized(c.k.shape()),
                   Tensor::uninitialized(c.v.shape())};
  Tensor dS = Tensor::uninitialized({d.B, d.H, d.T, d.S});
  // dP = dout v^T : [T, S]
  blas::gemm_strided_batched(Trans::N, Trans::T, d.T, d.S, d.Dv, 1.0f, dout.data(), d.Dv, d.T * d.Dv,
                             c.v.data(), d.Dv, d.S * d.Dv, 0.0f, dS.data(), d.S, d.T * d.S, BH);
  // dv = P^T dout : [S, Dv]
  blas::gemm_strided_batched(Trans::T, Trans::N, d.S, d.Dv, d.T, 1.0f, P, d.S, d.T * d.S, dout.data(), d.Dv,
                             d.T * d.Dv, 0.0f, g.dv.data(), d.Dv, d.S * d.Dv, BH);
  masked_softmax_backward_inplace(dS, c.weights);
  // dq = scale * dS k : [T, Dk];   dk = scale * dS^T q : [S, Dk]
  blas::gemm_strided_batched(Trans::N, Trans::N, d.T, d.Dk, d.S, c.scale, dS.data(), d.S, d.T * d.S,
                             c.k.data(), d.Dk, d.S * d.Dk, 0.0f, g.dq.data(), d.Dk, d.T * d.Dk, BH);
  blas::gemm_strided_batched(Trans::T, Trans::N, d.S, d.Dk, d.T, c.scale, dS.data(), d.S, d.T * d.S,
                             c.q.data(), d.Dk, d.T * d.Dk, 0.0f, g.dk.data(), d.Dk, d.S * d.Dk, BH);
  return g;
}

// ---- streaming path -------------------------------------------------------------------------

// One online-softmax step over a score tile [nq, ns] of keys [s0, s0 + ns): per row, hides the
// keys the row cannot see, moves the running max m to cover the tile, rescales the running
// sum l and the output accumulator row acc [Dv] by exp(m_old - m_new) when the max moved, adds
// the tile's exp(score - m) to l, and leaves those exps in the tile (zeros where hidden) for
// the product with v.
ATTN_VECTOR_CLONES
void online_softmax_tile(float* tile, int64_t nq, int64_t ns, int64_t s0, const RowMask* rows, float* m,
                         float* l, float* acc, int64_t Dv) {
  for (int64_t i = 0; i < nq; ++i) {
    float* srow = tile + i * ns;
    const RowMask& r = rows[i];
    const int64_t a = std::max(r.lo, s0), e = std::min(r.hi, s0 + ns);
    if (a >= e) {   // nothing visible in this tile for this row
      std::fill(srow, srow + ns, 0.0f);
      continue;
    }
    std::fill(srow, srow + (a - s0), 0.0f);
    std::fill(srow + (e - s0), srow + ns, 0.0f);
    hide_kept_out(srow, r, a, e, s0);
    float* vis = srow + (a - s0);
    const int64_t n = e - a;
    const float mb = row_max(vis, n);
    if (mb == -kInf) {   // all hidden by the explicit mask
      std::fill(vis, vis + n, 0.0f);
      continue;
    }
    const float m_new = std::max(m[i], mb);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) {
      vis[j] = exp_approx(vis[j] - m_new);
      sum += vis[j];
    }
    if (m_new != m[i]) {   // the max moved: rescale what was summed against the old one
      if (m[i] != -kInf) {   // (nothing was, before the row's first visible tile: l, acc are 0)
        const float corr = std::exp(m[i] - m_new);
        l[i] *= corr;
        float* arow = acc + i * Dv;
#pragma omp simd
        for (int64_t c = 0; c < Dv; ++c) arow[c] *= corr;
      }
      m[i] = m_new;
    }
    l[i] += sum;
  }
}

// One task per (head, query block): the query block walks over the key blocks its rows can
// see, keeping a running max m, running sum l and unnormalised output per row.
Tensor forward_streaming(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                         const AttentionMask& mask, const AttentionOptions& opt, const Dims& d,
                         Tensor* lse_out) {
  const int64_t BH = d.B * d.H, bq = opt.block_q, bk = opt.block_k;
  const int64_t nqb = (d.T + bq - 1) / bq;
  const int32_t* lengths = lengths_of(mask);
  // Every row of both is written by the task of its query block.
  Tensor out = Tensor::uninitialized({d.B, d.H, d.T, d.Dv});
  Tensor lse = Tensor::uninitialized({d.B, d.H, d.T});
  const float *qp = q.data(), *kp = k.data(), *vp = v.data();
  float *op = out.data(), *lp = lse.data();

#pragma omp parallel if (BH * nqb > 1 && BH * d.T * d.S * (d.Dk + d.Dv) >= kParallelWork)
  {
    std::vector<float> tile(bq * bk), m(bq), l(bq);
    std::vector<RowMask> rows(bq);
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < BH * nqb; ++task) {
      const int64_t bh = task / nqb, t0 = (task % nqb) * bq, nq = std::min(bq, d.T - t0);
      const int64_t b = bh / d.H;
      const float* qb = qp + (bh * d.T + t0) * d.Dk;
      const float* kh = kp + bh * d.S * d.Dk;
      const float* vh = vp + bh * d.S * d.Dv;
      float* acc = op + (bh * d.T + t0) * d.Dv;   // accumulate straight into the output rows
      for (int64_t i = 0; i < nq; ++i) rows[i] = row_mask(mask, lengths, b, t0 + i, d.T, d.S);
      std::fill(m.begin(), m.begin() + nq, -kInf);
      std::fill(l.begin(), l.begin() + nq, 0.0f);
      std::fill(acc, acc + nq * d.Dv, 0.0f);
      const auto [klo, khi] = block_range(rows.data(), nq);
      for (int64_t s0 = klo; s0 < khi; s0 += bk) {
        const int64_t ns = std::min(bk, khi - s0);
        // tile = scale * q_blk k_blk^T : [nq, ns]
        blas::gemm(Trans::N, Trans::T, nq, ns, d.Dk, scale, qb, d.Dk, kh + s0 * d.Dk, d.Dk, 0.0f, tile.data(),
                   ns);
        online_softmax_tile(tile.data(), nq, ns, s0, rows.data(), m.data(), l.data(), acc, d.Dv);
        // acc += tile v_blk : [nq, Dv]
        blas::gemm(Trans::N, Trans::N, nq, d.Dv, ns, 1.0f, tile.data(), ns, vh + s0 * d.Dv, d.Dv, 1.0f, acc,
                   d.Dv);
      }
      for (int64_t i = 0; i < nq; ++i) {
        float* arow = acc + i * d.Dv;
        const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        for (int64_t c = 0; c < d.Dv; ++c) arow[c] *= inv;
        lp[bh * d.T + t0 + i] = l[i] > 0.0f ? m[i] + std::log(l[i]) : kInf;
      }
    }
  }
  if (lse_out != nullptr) *lse_out = lse;
  return out;
}

// Backward, per score tile [nq, ns] of keys [s0, s0 + ns): the scores (scale q k^T) become the
// weights P = exp(score - lse) of the forward, zeros on keys a row cannot see.
ATTN_VECTOR_CLONES
void recompute_probs_tile(float* P, int64_t nq, int64_t ns, int64_t s0, const RowMask* rows, const float* lse) {
  for (int64_t i = 0; i < nq; ++i) {
    float* prow = P + i * ns;
    const int64_t a = std::clamp(rows[i].lo, s0, s0 + ns), e = std::clamp(rows[i].hi, a, s0 + ns);
    std::fill(prow, prow + (a - s0), 0.0f);
    std::fill(prow + (e - s0), prow + ns, 0.0f);
    hide_kept_out(prow, rows[i], a, e, s0);
    const float m = lse[i];
#pragma omp simd
    for (int64_t j = a - s0; j < e - s0; ++j) prow[j] = exp_approx(prow[j] - m);
  }
}

// dP [nq, ns] -> dS = P (dP - D), D [nq] holding rowsum(dout * out) per query row.
ATTN_VECTOR_CLONES
void softmax_grad_tile(float* dP, const float* P, int64_t nq, int64_t ns, const float* D) {
  for (int64_t i = 0; i < nq; ++i) {
    float* drow = dP + i * ns;
    const float* prow = P + i * ns;
    const float Di = D[i];
#pragma omp simd
    for (int64_t j = 0; j < ns; ++j) drow[j] = prow[j] * (drow[j] - Di);
  }
}

// One task per head (it owns that head's dq, dk, dv, so no two threads write the same row):
// for every query block and visible key block, recompute P = exp(scale q k^T - lse) and
//   dv += P^T dout,  dP = dout v^T,  dS = P (dP - rowsum(dout * out)),
//   dq += scale dS k,  dk += scale dS^T q.
AttentionGrads backward_streaming(const Tensor& dout, const AttentionCache& c, const Dims& d) {
  const int64_t BH = d.B * d.H, bq = c.options.block_q, bk = c.options.block_k;
  const int32_t* lengths = lengths_of(c.mask);
  AttentionGrads g{Tensor(c.q.shape()), Tensor(c.k.shape()), Tensor(c.v.shape())};
  const float *qp = c.q.data(), *kp = c.k.data(), *vp = c.v.data(), *op = c.out.data(), *lp = c.lse.data(),
              *dop = dout.data();
  float *dqp = g.dq.data(), *dkp = g.dk.data(), *dvp = g.dv.data();

#pragma omp parallel if (BH > 1 && BH * d.T * d.S * (d.Dk + d.Dv) >= kParallelWork)
  {
    std::vector<float> P(bq * bk), dP(bq * bk), D(bq);
    std::vector<RowMask> rows(bq);
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < BH; ++bh) {
      const int64_t b = bh / d.H;
      for (int64_t t0 = 0; t0 < d.T; t0 += bq) {
        const int64_t nq = std::min(bq, d.T - t0);
        const float* qb = qp + (bh * d.T + t0) * d.Dk;
        const float* dob = dop + (bh * d.T + t0) * d.Dv;
        const float* ob = op + (bh * d.T + t0) * d.Dv;
        const float* lb = lp + bh * d.T + t0;
        float* dqb = dqp + (bh * d.T + t0) * d.Dk;
        for (int64_t i = 0; i < nq; ++i) {
          rows[i] = row_mask(c.mask, lengths, b, t0 + i, d.T, d.S);
          float s = 0.0f;
          for (int64_t x = 0; x < d.Dv; ++x) s += dob[i * d.Dv + x] * ob[i * d.Dv + x];
          D[i] = s;
        }
        const auto [klo, khi] = block_range(rows.data(), nq);
        for (int64_t s0 = klo; s0 < khi; s0 += bk) {
          const int64_t ns = std::min(bk, khi - s0);
          const float* kb = kp + (bh * d.S + s0) * d.Dk;
          const float* vb = vp + (bh * d.S + s0) * d.Dv;
          blas::gemm(Trans::N, Trans::T, nq, ns, d.Dk, c.scale, qb, d.Dk, kb, d.Dk, 0.0f, P.data(), ns);
          recompute_probs_tile(P.data(), nq, ns, s0, rows.data(), lb);
          // dv_blk += P^T dout_blk : [ns, Dv]
          blas::gemm(Trans::T, Trans::N, ns, d.Dv, nq, 1.0f, P.data(), ns, dob, d.Dv, 1.0f,
                     dvp + (bh * d.S + s0) * d.Dv, d.Dv);
          // dP = dout_blk v_blk^T : [nq, ns]
          blas::gemm(Trans::N, Trans::T, nq, ns, d.Dv, 1.0f, dob, d.Dv, vb, d.Dv, 0.0f, dP.data(), ns);
          softmax_grad_tile(dP.data(), P.data(), nq, ns, D.data());
          // dq_blk += scale dS k_blk : [nq, Dk];   dk_blk += scale dS^T q_blk : [ns, Dk]
          blas::gemm(Trans::N, Trans::N, nq, d.Dk, ns, c.scale, dP.data(), ns, kb, d.Dk, 1.0f, dqb, d.Dk);
          blas::gemm(Trans::T, Trans::N, ns, d.Dk, nq, c.scale, dP.data(), ns, qb, d.Dk, 1.0f,
                     dkp + (bh * d.S + s0) * d.Dk, d.Dk);
        }
      }
    }
  }
  return g;
}

}  // namespace

void check_attention_mask(const AttentionMask& mask, int64_t B, int64_t T, int64_t S,
                          const std::string& label) {
  if (mask.key_lengths.defined() && !mask.key_lengths.empty()) {
    check_tensor(mask.key_lengths, {B}, label + ": key_lengths [B]", DType::i32);
    const int32_t* len = mask.key_lengths.idata();
    for (int64_t b = 0; b < B; ++b)
      if (len[b] < 0 || len[b] > S)
        throw DataError(label + ": key_lengths[" + std::to_string(b) + "] = " + std::to_string(len[b]) +
                        " is outside [0, S = " + std::to_string(S) + "]");
  }
  if (mask.window < -1)
    throw ConfigError(label + ": window radius must be >= 0 (or -1 for none), got " +
                      std::to_string(mask.window));
  if (mask.query_offset < 0)
    throw ConfigError(label + ": query_offset must be >= 0, got " + std::to_string(mask.query_offset));
  if (mask.keep.defined() && !mask.keep.empty()) {
    check_tensor(mask.keep, {kAny, T, S}, label + ": keep mask [B or 1, T, S]", DType::i32);
    if (mask.keep.dim(0) != 1 && mask.keep.dim(0) != B)
      throw ShapeError(label + ": keep mask [B or 1, T, S] has shape " + to_string(mask.keep.shape()) +
                       ", expected a leading dimension of 1 or B = " + std::to_string(B));
  }
}

void masked_softmax_inplace(Tensor& scores, const AttentionMask& mask) {
  check_tensor(scores, {kAny, kAny, kAny, kAny}, "masked softmax: scores [B, G, T, S]");
  const int64_t B = scores.dim(0), G = scores.dim(1), T = scores.dim(2), S = scores.dim(3);
  check_attention_mask(mask, B, T, S, "masked softmax");
  const int32_t* lengths = lengths_of(mask);
  float* x = scores.data();
  const int64_t rows = B * G * T;
#pragma omp parallel for schedule(static) if (rows * S >= kParallelElems)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = r % T, b = r / (G * T);
    softmax_row(x + r * S, S, row_mask(mask, lengths, b, t, T, S));
  }
}

void masked_softmax_backward_inplace(Tensor& dweights, const Tensor& weights) {
  check_tensor(dweights, weights.shape(), "masked softmax backward: dweights");
  const int64_t S = weights.dim(-1), rows = S ? weights.numel() / S : 0;
  float* dp = dweights.data();
  const float* p = weights.data();
#pragma omp parallel for schedule(static) if (rows * S >= kParallelElems)
  for (int64_t r = 0; r < rows; ++r) softmax_backward_row(dp + r * S, p + r * S, S);
}

Tensor attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                         const AttentionMask& mask, AttentionCache* cache, Tensor* weights,
                         const AttentionOptions& options) {
  const Dims d = check_inputs(q, k, v);
  check_attention_mask(mask, d.B, d.T, d.S, "attention");
  if (options.block_q < 1 || options.block_k < 1)
    throw ConfigError("attention: block sizes must be >= 1, got block_q " + std::to_string(options.block_q) +
                      ", block_k " + std::to_string(options.block_k));
  const bool stream =
      weights == nullptr && (options.path == AttentionPath::streaming ||
                             (options.path == AttentionPath::automatic && d.S > kStreamMinKeys));
  flops::add_sequential_steps(1);   // every query row at once (the key blocks are a reduction)
  Tensor out, P, lse;
  if (stream)
    out = forward_streaming(q, k, v, scale, mask, options, d, cache ? &lse : nullptr);
  else
    out = forward_materialised(q, k, v, scale, mask, d, P);
  if (weights != nullptr) *weights = P;
  if (cache != nullptr) {
    // The streaming cache keeps its own copy of the output (O(T) memory), so a caller may
    // update the returned tensor in place (a residual add) without corrupting backward.
    *cache = AttentionCache{q, k, v, mask, scale, options, stream, P, stream ? out.clone() : Tensor(), lse};
  }
  return out;
}

AttentionGrads attention_backward(const Tensor& dout, const AttentionCache& cache) {
  const Dims d = check_inputs(cache.q, cache.k, cache.v);
  check_tensor(dout, {d.B, d.H, d.T, d.Dv}, "attention backward: dout [B, H, T, Dv]");
  flops::add_sequential_steps(1);
  return cache.streamed ? backward_streaming(dout, cache, d) : backward_materialised(dout, cache, d);
}

}  // namespace attn::ops

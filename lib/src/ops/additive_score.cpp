// Additive attention scores: one batch row of pairs per task, each a cloned vector kernel.
#include "attn/ops/additive_score.hpp"

#include "attn/core/flops.hpp"
#include "attn/core/tensor.hpp"
#include "attn/core/threading.hpp"
#include "attn/ops/activation.hpp"
#include "vector_clones.hpp"

namespace attn::ops {
namespace {

// The S pairs of one batch row.
ATTN_VECTOR_CLONES
void scores_row(const float* uk, const float* wq, const float* v, int64_t S, int64_t A, float* hidden, float* e) {
  for (int64_t s = 0; s < S; ++s) {
    const float* ukr = uk + s * A;
    float* hr = hidden + s * A;
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t a = 0; a < A; ++a) {
      const float t = tanh_fast(ukr[a] + wq[a]);
      hr[a] = t;
      acc += t * v[a];
    }
    e[s] = acc;
  }
}

// One batch row's dpre into duk and dwq, and its part of v's gradient into dv_row (written).
ATTN_VECTOR_CLONES
void scores_backward_row(const float* hidden, const float* de, const float* v, int64_t S, int64_t A, float* duk,
                         float* dwq, float* dv_row) {
  for (int64_t a = 0; a < A; ++a) dwq[a] = 0.0f, dv_row[a] = 0.0f;
  for (int64_t s = 0; s < S; ++s) {
    if (de[s] == 0.0f) continue;   // masked key
    const float* hr = hidden + s * A;
    float* dr = duk + s * A;
#pragma omp simd
    for (int64_t a = 0; a < A; ++a) {
      const float d = de[s] * v[a] * (1.0f - hr[a] * hr[a]);
      dr[a] += d;
      dwq[a] += d;
      dv_row[a] += de[s] * hr[a];
    }
  }
}

}  // namespace

void additive_scores(const float* uk, const float* wq, const float* v, int64_t B, int64_t S, int64_t A,
                     float* hidden, float* e) {
#pragma omp parallel for schedule(static) if (worth_splitting(B * S * A))
  for (int64_t b = 0; b < B; ++b) scores_row(uk + b * S * A, wq + b * A, v, S, A, hidden + b * S * A, e + b * S);
  flops::add(B * S * A);   // the dot with v
}

void additive_scores_backward(const float* hidden, const float* de, const float* v, int64_t B, int64_t S,
                              int64_t A, float* duk, float* dwq, float* dv) {
  Tensor dv_rows = Tensor::uninitialized({B, A});
  float* parts = dv_rows.data();
#pragma omp parallel for schedule(static) if (worth_splitting(B * S * A))
  for (int64_t b = 0; b < B; ++b)
    scores_backward_row(hidden + b * S * A, de + b * S, v, S, A, duk + b * S * A, dwq + b * A, parts + b * A);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t a = 0; a < A; ++a) dv[a] += parts[b * A + a];
  flops::add(B * S * A);   // hidden^T de
}

}  // namespace attn::ops

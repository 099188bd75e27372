// The context's backward: one batch row per task, each a cloned vector kernel.
#include "attn/ops/attention_context.hpp"

#include "attn/core/flops.hpp"
#include "attn/core/threading.hpp"
#include "vector_clones.hpp"

namespace attn::ops {
namespace {

ATTN_VECTOR_CLONES
void context_backward_row(const float* values, const float* alpha, const float* dctx, int64_t S, int64_t Dv,
                          float* dalpha, float* dvalues) {
  for (int64_t s = 0; s < S; ++s) {
    const float* vr = values + s * Dv;
    float* dr = dvalues + s * Dv;
    const float a = alpha[s];
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t d = 0; d < Dv; ++d) {
      dot += vr[d] * dctx[d];
      dr[d] += a * dctx[d];
    }
    dalpha[s] += dot;
  }
}

}  // namespace

void attention_context_backward(const float* values, const float* alpha, const float* dctx, int64_t B, int64_t S,
                                int64_t Dv, float* dalpha, float* dvalues) {
#pragma omp parallel for schedule(static) if (worth_splitting(B * S * Dv))
  for (int64_t b = 0; b < B; ++b)
    context_backward_row(values + b * S * Dv, alpha + b * S, dctx + b * Dv, S, Dv, dalpha + b * S,
                         dvalues + b * S * Dv);
  flops::add(2 * B * S * Dv);
}

}  // namespace attn::ops

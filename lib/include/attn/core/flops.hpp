// A process-wide multiply-add counter. The BLAS seam adds M*N*K for every GEMM and ops add
// their own elementwise work, so a tool can report the exact arithmetic a layer performed
// (attn-complexity reads it) instead of estimating it from formulas.
#pragma once
#include <cstdint>

namespace attn::flops {

void add(int64_t multiply_adds);   // thread-safe, relaxed
int64_t count();                   // multiply-adds since the last reset
void reset();

}  // namespace attn::flops

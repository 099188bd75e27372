// A process-wide multiply-add counter. The BLAS seam adds M*N*K for every GEMM and ops add
// their own elementwise work, so a tool can report the exact arithmetic a layer performed
// (attn-complexity reads it) instead of estimating it from formulas.
#pragma once
#include <cstdint>

namespace attn::flops {

void add(int64_t multiply_adds);   // thread-safe, relaxed
int64_t count();                   // multiply-adds since the last reset
void reset();                      // both counters

// Sequential steps along the sequence axis, the "sequential operations" of Vaswani et al.
// (2017, Table 1). Every op that mixes positions reports the chain of dependent steps it runs:
// 1 for an op that handles all positions at once (attention core, convolution), one per time
// step for a recurrence (the LSTM/GRU loops, each cell call). Position-wise ops (linear, layer
// norm) add nothing: they never make one position wait for another.
void add_sequential_steps(int64_t steps);   // thread-safe, relaxed
int64_t sequential_steps();                 // steps since the last reset

}  // namespace attn::flops

// Private to the ops layer: ATTN_VECTOR_CLONES marks a hot elementwise kernel (the exp of the
// attention softmax, the recurrent gate nonlinearities, im2col) for function multiversioning. GCC
// compiles the function twice, for baseline x86-64 (SSE2, 4 floats a vector) and for
// x86-64-v3 (AVX2 + FMA, 8 floats, the level OpenBLAS's Haswell kernels already use), and the
// dynamic loader binds the clone the CPU supports (an ifunc). libattn thus still runs on any
// x86-64, while the kernels that sit beside the GEMMs run as wide as the GEMMs do: at half that
// width the attention softmax costs a visible share of the two products around it
// (docs/ARCHITECTURE.md, "Compiler flags").
//
// Use it on a function that loops over a row or a tile (the dispatch is an indirect call), not
// on one holding an OpenMP region (the outlined body would not be cloned). Helpers it calls must
// be inlined to be compiled into each clone: exp_approx and tanh_fast are small enough; mark
// anything bigger [[gnu::always_inline]] (a lambda or template left out of line runs the
// baseline code). Check with objdump that the clone holds ymm instructions. The two clones may round
// differently (FMA contraction, vector width in reductions): results stay within float
// rounding of each other, and are deterministic on a given machine.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define ATTN_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ATTN_VECTOR_CLONES
#endif

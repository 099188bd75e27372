# Ops: softmax / log-softmax (with masks), fused softmax cross-entropy, layer norm, dropout.
set(ATTN_OPS_SOFTMAX_LOSS_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/softmax.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cross_entropy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/layer_norm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dropout.cpp)
list(APPEND ATTN_SOURCES ${ATTN_OPS_SOFTMAX_LOSS_SOURCES})
# GCC vectorises the float selects in these row loops (masks, exp_approx's range clamp) only
# when comparisons may not trap; we never read floating-point exception flags, and this is
# clang's default. Without it the exp loops run scalar, about 2x slower.
set_source_files_properties(${ATTN_OPS_SOFTMAX_LOSS_SOURCES} PROPERTIES COMPILE_OPTIONS -fno-trapping-math)

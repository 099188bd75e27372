# Ops: softmax / log-softmax (with masks), fused softmax cross-entropy, layer norm, dropout.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/softmax.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cross_entropy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/layer_norm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dropout.cpp)

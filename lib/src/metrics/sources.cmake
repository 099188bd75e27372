# metrics: corpus BLEU, token and sequence accuracy, perplexity.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/bleu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/accuracy.cpp)

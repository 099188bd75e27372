# metrics: corpus BLEU (also by part and by source length), token and sequence accuracy, perplexity.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/bleu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bleu_buckets.cpp
  ${CMAKE_CURRENT_LIST_DIR}/accuracy.cpp)

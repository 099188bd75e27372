# decode: the one greedy search, sampling and beam search over any model's incremental decoder.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/search.cpp)

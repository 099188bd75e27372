list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/attention_core.cpp)

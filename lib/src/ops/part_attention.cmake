list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/attention_core.cpp
  ${CMAKE_CURRENT_LIST_DIR}/additive_score.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attention_context.cpp)

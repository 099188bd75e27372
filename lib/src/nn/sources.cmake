list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/multi_head_attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/positional_encoding.cpp)

# models/memnet: the end-to-end memory network (MemN2N).
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/memnet_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/memnet.cpp)

list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/trainer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoints.cpp)

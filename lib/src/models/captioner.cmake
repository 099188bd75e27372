# models/captioner: the Show-Attend-and-Tell captioner (conv encoder, soft-attention LSTM decoder).
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/captioner_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/captioner.cpp)

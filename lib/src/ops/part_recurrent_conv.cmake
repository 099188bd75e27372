# Recurrent cells (LSTM, GRU), convolution, pooling and the NTM addressing ops.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/lstm_cell.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gru_cell.cpp
  ${CMAKE_CURRENT_LIST_DIR}/conv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/conv_winograd.cpp
  ${CMAKE_CURRENT_LIST_DIR}/conv_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/batch_norm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/addressing.cpp)

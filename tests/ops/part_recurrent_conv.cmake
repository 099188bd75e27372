attn_add_test(test_ops_recurrent_conv SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_lstm_cell.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_gru_cell.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_conv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_conv_winograd.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_conv_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_batch_norm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_addressing.cpp)

attn_add_test(test_nn SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_layers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_attention_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_multi_head_attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_positional_encoding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_rnn.cpp)

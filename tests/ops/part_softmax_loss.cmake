attn_add_test(test_ops_softmax_loss SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_softmax.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_cross_entropy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_layer_norm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_dropout.cpp)

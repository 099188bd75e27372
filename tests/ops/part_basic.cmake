attn_add_test(test_ops_basic SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_matmul.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_elementwise.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_activation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_linear.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_embedding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_embedding_bag.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_shape_ops.cpp)

# The basic ops: products, broadcasting arithmetic, activations, linear, embedding, shape ops.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/matmul.cpp
  ${CMAKE_CURRENT_LIST_DIR}/elementwise.cpp
  ${CMAKE_CURRENT_LIST_DIR}/activation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/linear.cpp
  ${CMAKE_CURRENT_LIST_DIR}/embedding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/embedding_bag.cpp
  ${CMAKE_CURRENT_LIST_DIR}/shape_ops.cpp)

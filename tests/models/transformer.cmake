attn_add_test(test_transformer SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_transformer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_transformer_decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_transformer_classifier.cpp)

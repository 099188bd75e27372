attn_add_test(test_ops_attention SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_attention_core.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_additive_score.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_attention_context.cpp)

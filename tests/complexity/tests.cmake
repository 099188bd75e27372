attn_add_test(test_complexity SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_complexity.cpp)

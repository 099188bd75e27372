attn_add_test(test_decode SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_search.cpp)

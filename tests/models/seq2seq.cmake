attn_add_test(test_seq2seq SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_seq2seq.cpp)

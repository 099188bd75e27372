# models/ntm: the neural Turing machine (the copy test draws its data with attn_datasets).
attn_add_test(test_ntm SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_ntm.cpp
  LIBS attn_datasets)

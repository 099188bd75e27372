# models/memnet: the end-to-end memory network (its batches are built in memory).
attn_add_test(test_memnet SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_memnet.cpp)

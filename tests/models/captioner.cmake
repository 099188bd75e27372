# models/captioner: the Show-Attend-and-Tell captioner (its batches are built in memory).
attn_add_test(test_captioner SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_captioner.cpp)

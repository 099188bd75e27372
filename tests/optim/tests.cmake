attn_add_test(test_optim SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_optimizers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_clip.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_schedule.cpp)

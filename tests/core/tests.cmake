attn_add_test(test_core SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_tensor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_rng.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_thread_governor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_team.cpp)

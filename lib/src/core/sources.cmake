list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/background.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tensor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rng.cpp
  ${CMAKE_CURRENT_LIST_DIR}/threading.cpp
  ${CMAKE_CURRENT_LIST_DIR}/thread_governor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/flops.cpp)

# models/ntm: the neural Turing machine.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/ntm_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ntm.cpp)

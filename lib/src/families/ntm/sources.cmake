# families/ntm: the neural Turing machine and its LSTM baseline.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/family.cpp)

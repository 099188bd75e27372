# families/memnet: the end-to-end memory network and its question-answering data sets (bAbI).
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/qa_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/family.cpp)

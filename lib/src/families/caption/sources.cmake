# families/caption: the soft-attention image captioner and its captioning data sets.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/caption_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/family.cpp)

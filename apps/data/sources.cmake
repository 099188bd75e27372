# attn-data: data-set generators and importers (datasets/, target attn_datasets) and `info`.
attn_add_tool(attn-data SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/generator_options.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ntm_verbs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/toy_verbs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/posenc.cpp
  ${CMAKE_CURRENT_LIST_DIR}/text_verbs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/distil_verb.cpp
  ${CMAKE_CURRENT_LIST_DIR}/subword_verb.cpp
  ${CMAKE_CURRENT_LIST_DIR}/finetune_verbs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/babi_verb.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_verbs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/info.cpp)
target_link_libraries(attn-data PRIVATE attn_datasets)

# attn-caption: train / eval / caption (attn/families/caption/run.hpp).
attn_add_tool(attn-caption SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/train_verb.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_verbs.cpp)

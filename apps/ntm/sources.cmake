# attn-ntm: train / eval / run (attn/families/ntm/run.hpp).
attn_add_tool(attn-ntm SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/train_verb.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_verbs.cpp)

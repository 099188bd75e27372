# attn-memnet: train / eval / answer (attn/families/memnet/run.hpp).
attn_add_tool(attn-memnet SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/train_verb.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_verbs.cpp)

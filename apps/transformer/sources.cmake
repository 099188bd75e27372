# attn-transformer: train / eval / translate / generate / average / finetune / classify (attn/families/transformer/run.hpp).
attn_add_tool(attn-transformer SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/train_verb.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_verbs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/finetune_verbs.cpp)

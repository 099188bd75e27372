# attn-seq2seq: train / eval / translate (attn/families/seq2seq/run.hpp).
attn_add_tool(attn-seq2seq SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/train_verb.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_verbs.cpp)

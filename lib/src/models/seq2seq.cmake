# models/seq2seq: the RNN encoder-decoder with attention.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/seq2seq_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/seq2seq.cpp
  ${CMAKE_CURRENT_LIST_DIR}/seq2seq_step.cpp)

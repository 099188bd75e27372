# data: tokenisation, vocabularies, subword models, length-bucketed batching and padding, the data-set layouts.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vocab.cpp
  ${CMAKE_CURRENT_LIST_DIR}/subword.cpp
  ${CMAKE_CURRENT_LIST_DIR}/batching.cpp
  ${CMAKE_CURRENT_LIST_DIR}/splits.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rows.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sequence_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/token_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/corpus.cpp)

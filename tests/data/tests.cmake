# lib/data: tokenisation, vocabularies, subword models, batching and padding, the token and sequence data-set layouts, rows read from files.
attn_add_test(test_data SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_vocab.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_subword.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_batching.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_sequence_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_rows.cpp)

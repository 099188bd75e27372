# lib/data: tokenisation, vocabularies, batching and padding, the sequence, QA and labelled data-set layouts.
attn_add_test(test_data SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_vocab.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_batching.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_sequence_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_qa_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_caption_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_labelled_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_rows.cpp)

# Text data and metrics: tokenisation, vocabularies, batching (lib/data) and BLEU, accuracy
# (lib/metrics). The BLEU case compares with NLTK through $PYTHON (default /usr/bin/python3).
attn_add_test(test_text SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_vocab.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_batching.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_sequence_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_bleu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_bleu_buckets.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_accuracy.cpp)

# The parallel-text importer (datasets/) and the tools attn-data multi30k|parallel, attn-bleu.
if(TARGET attn_datasets)
  find_package(ZLIB REQUIRED)   # the test writes gzip fixtures
  attn_add_test(test_text_tools SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/test_parallel_text.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_text_tools.cpp
    LIBS attn_datasets ZLIB::ZLIB)
  add_dependencies(test_text_tools attn-data attn-bleu)
endif()

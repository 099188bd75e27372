# Text data and metrics: tokenisation, vocabularies, batching (lib/data) and BLEU, accuracy
# (lib/metrics). The BLEU case compares with NLTK through $PYTHON (default /usr/bin/python3).
attn_add_test(test_text SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_vocab.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_batching.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_bleu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_accuracy.cpp)

# lib/metrics: BLEU (compared with NLTK through $PYTHON, default /usr/bin/python3), BLEU by
# source length, accuracy, perplexity.
attn_add_test(test_metrics SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_bleu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_bleu_buckets.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_accuracy.cpp)

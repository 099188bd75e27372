# datasets/: the synthetic generators, the parallel-text, bAbI, MNIST and fine-tuning importers,
# the captioning sets and sequence-level distillation (attn_datasets).
find_package(ZLIB REQUIRED)   # the importers' tests write gzip fixtures
attn_add_test(test_datasets SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_datasets.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_parallel_text.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_distillation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_subword_multi30k.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_babi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_captions.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_finetune_sets.cpp
  LIBS attn_datasets ZLIB::ZLIB)

# datasets/: the synthetic generators and the parallel-text, bAbI and fine-tuning importers (attn_datasets).
find_package(ZLIB REQUIRED)   # the importer's test writes gzip fixtures
attn_add_test(test_datasets SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_datasets.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_parallel_text.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_babi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_finetune_sets.cpp
  LIBS attn_datasets ZLIB::ZLIB)

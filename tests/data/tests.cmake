# The synthetic data-set generators of datasets/ ([unit][data-gen]).
attn_add_test(test_datasets SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_datasets.cpp
  LIBS attn_datasets)

# families/ntm: the neural Turing machine (the copy test draws its data with attn_datasets);
# attn-ntm run as a user would, chained with attn-data and attn-plot through files and standard
# streams ([cli]); its model files, runs and SGD steps read without attnlab by
# tests/formats/reload.py with this family's reload.py ([integration], "formats: ...").
attn_add_test(test_ntm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model.cpp LIBS attn_datasets)
attn_add_test(test_ntm_cli SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_reload.cpp)
attn_tests_run_tools(test_ntm_cli attn-ntm attn-data attn-plot)

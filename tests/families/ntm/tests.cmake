# families/ntm: the neural Turing machine (the copy test draws its data with attn_datasets);
# attn-ntm run as a user would, chained with attn-data and attn-plot through files and standard
# streams ([cli]).
attn_add_test(test_ntm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model.cpp LIBS attn_datasets)
attn_add_test(test_ntm_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cli.cpp)
attn_tests_run_tools(test_ntm_cli attn-ntm attn-data attn-plot)

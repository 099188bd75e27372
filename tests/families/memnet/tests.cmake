# families/memnet: the end-to-end memory network (batches built in memory), its training task on
# the real bAbI task 1 (skipped without the shared data) and the question-answering layout;
# attn-memnet run as a user would, chained with attn-data babi and attn-plot table ([cli]); its
# model files read without attnlab by tests/formats/reload.py with this family's reload.py
# ([integration], "formats: ...").
attn_add_test(test_memnet SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_qa_data.cpp
  LIBS attn_datasets)
attn_add_test(test_memnet_cli SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_reload.cpp)
attn_tests_run_tools(test_memnet_cli attn-memnet attn-data attn-plot)

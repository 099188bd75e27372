# families/caption: the Show-Attend-and-Tell captioner (batches built in memory) and the
# captioning layout; attn-caption run as a user would, chained with attn-data shapes /
# mnist-strips and attn-plot overlay through files and pipes ([cli]); its model files read without
# attnlab by tests/formats/reload.py with this family's reload.py ([integration], "formats: ...").
attn_add_test(test_caption SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_caption_data.cpp)
attn_add_test(test_caption_cli SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_reload.cpp)
attn_tests_run_tools(test_caption_cli attn-caption attn-data attn-plot)

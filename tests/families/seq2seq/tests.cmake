# families/seq2seq: the RNN encoder-decoder (every attention variant's gradient, decoding);
# attn-seq2seq run as a user would, chained with attn-data, attn-bleu and attn-plot through files
# and standard streams ([cli]); its model files read without attnlab by tests/formats/reload.py
# with this family's reload.py ([integration], "formats: ...").
attn_add_test(test_seq2seq SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model.cpp)
attn_add_test(test_seq2seq_cli SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_reload.cpp
  LIBS attn_plot)
attn_tests_run_tools(test_seq2seq_cli attn-seq2seq attn-data attn-bleu attn-plot)

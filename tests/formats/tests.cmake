# Model files read without attnlab: tests/formats/reload.py (h5py and numpy only, through $PYTHON,
# default /usr/bin/python3) rebuilds Transformer, fine-tuned Transformer classifier, seq2seq, memnet, NTM and
# captioner models from their HDF5 files following docs/FORMATS.md and reproduces the library's logits (a
# classifier's class logits, a memnet's attention and answers, an NTM's outputs and weightings, a captioner's
# greedy captions); `reload.py --kinds` must list every model kind of every family of the registry
# ([integration]).
attn_add_test(test_formats SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_formats.cpp)
target_compile_definitions(test_formats PRIVATE ATTN_FORMATS_RELOAD_SCRIPT="${CMAKE_CURRENT_LIST_DIR}/reload.py")
attn_tests_run_tools(test_formats attn-transformer attn-seq2seq attn-memnet attn-ntm attn-caption attn-data)

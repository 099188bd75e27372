# The model-agnostic trainer (lib/train): resumption to the same bits, rotation and averaging
# of checkpoints, driven by a stand-in linear classifier written in the test; --repeats' choice of
# the run kept; decoding a split
# and the translation file (token_run), driven by a stand-in decoder.
attn_add_test(test_train SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_trainer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_optimizer_spec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_checkpoints.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_token_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_split_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_repeats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_thread_changes.cpp)

list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/trainer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data_parallel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoints.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data_fingerprint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/split_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/repeats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ntm_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/memnet_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/token_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/transformer_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/seq2seq_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/caption_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/classifier_run.cpp)

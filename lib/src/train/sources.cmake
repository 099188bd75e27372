# train: the model-agnostic trainer, data-parallel steps, checkpoints, running a split in batches,
# and what the token families share (token_run).
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/trainer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/start_phases.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_spec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data_parallel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoints.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data_fingerprint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rank_agreement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/split_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/repeats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/token_run.cpp)

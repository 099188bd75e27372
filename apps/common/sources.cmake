# attn_cli: what every tool shares (sub-command dispatch, exit codes, shared options and
# --config files, the effective configuration, progress display), and what the sequence-model
# tools' train, eval and translate verbs share (training, decoding). Tools include it as
# "common/cli.hpp", "common/options.hpp", "common/progress.hpp", "common/training.hpp",
# "common/decoding.hpp".
add_library(attn_cli STATIC
  ${CMAKE_CURRENT_LIST_DIR}/cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/options.cpp
  ${CMAKE_CURRENT_LIST_DIR}/progress.cpp
  ${CMAKE_CURRENT_LIST_DIR}/training.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decoding.cpp)
target_include_directories(attn_cli PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(attn_cli PUBLIC attn Boost::program_options PRIVATE attn_warnings)
target_compile_definitions(attn_cli PRIVATE ATTN_VERSION="${PROJECT_VERSION}")

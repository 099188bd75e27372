# apps/common in process ([unit][cli-common]) and the tools run as executables ([cli]).
attn_add_test(test_cli SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cli_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_attn_data.cpp
  LIBS attn_cli)
# The [cli] cases run the tools: build them first when the tests are built.
add_dependencies(test_cli attn-data)

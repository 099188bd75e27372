# attn-memnet run as a user would, chained with attn-data babi and attn-plot table through files
# ([cli]).
attn_add_test(test_memnet_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_memnet_cli.cpp)
# The [cli] cases run the tools: build them first when the tests are built.
foreach(tool attn-memnet attn-data attn-plot)
  if(TARGET ${tool})
    add_dependencies(test_memnet_cli ${tool})
  endif()
endforeach()

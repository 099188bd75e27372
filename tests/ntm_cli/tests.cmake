# attn-ntm run as a user would, chained with attn-data and attn-plot through files and through
# standard streams ([cli]).
attn_add_test(test_ntm_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ntm_cli.cpp)
# The [cli] cases run the tools: build them first when the tests are built.
foreach(tool attn-ntm attn-data attn-plot)
  if(TARGET ${tool})
    add_dependencies(test_ntm_cli ${tool})
  endif()
endforeach()

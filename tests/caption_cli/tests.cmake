# attn-caption run as a user would, chained with attn-data shapes / mnist-strips and attn-plot
# overlay through files and pipes ([cli]).
attn_add_test(test_attn_caption SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_attn_caption.cpp)
# The [cli] cases run the tools: build them first when the tests are built.
foreach(tool attn-caption attn-data attn-plot)
  if(TARGET ${tool})
    add_dependencies(test_attn_caption ${tool})
  endif()
endforeach()

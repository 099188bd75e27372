# attn-transformer run as a user would, chained with attn-data and attn-bleu through files and
# through standard streams ([cli]); the pre-train -> finetune -> classify chain; the output and
# resume guards.
attn_add_test(test_transformer_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_transformer_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_guards_cli.cpp ${CMAKE_CURRENT_LIST_DIR}/test_finetune_cli.cpp)
# The [cli] cases run the tools: build them first when the tests are built.
foreach(tool attn-transformer attn-data attn-bleu)
  if(TARGET ${tool})
    add_dependencies(test_transformer_cli ${tool})
  endif()
endforeach()

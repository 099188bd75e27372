# attn-seq2seq run as a user would, chained with attn-data, attn-bleu and attn-plot through
# files and through standard streams ([cli]).
attn_add_test(test_seq2seq_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_seq2seq_cli.cpp LIBS attn_plot)
# The [cli] cases run the tools: build them first when the tests are built.
foreach(tool attn-seq2seq attn-data attn-bleu attn-plot)
  if(TARGET ${tool})
    add_dependencies(test_seq2seq_cli ${tool})
  endif()
endforeach()

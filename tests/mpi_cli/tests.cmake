# Data-parallel training under mpirun, as a user runs it ([integration]): 2 ranks against one
# process, bit-identical repeats, resuming across rank counts, a killed or hung rank. Every case is
# reported skipped in a build without MPI or without mpirun.
attn_add_test(test_mpi_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mpi_cli.cpp)
foreach(tool attn-transformer attn-seq2seq attn-ntm attn-caption attn-memnet attn-data)
  if(TARGET ${tool})
    add_dependencies(test_mpi_cli ${tool})
  endif()
endforeach()

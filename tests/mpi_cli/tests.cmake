# Data-parallel training under mpirun, as a user runs it ([integration]): 2 ranks against one
# process, bit-identical repeats, resuming across rank counts, a killed or hung rank, ranks started
# with other options, data or checkpoints (MPMD) refused at start-up. Every case is reported
# skipped in a build without MPI or without mpirun.
attn_add_test(test_mpi_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mpi_cli.cpp)
attn_tests_run_tools(test_mpi_cli attn-transformer attn-seq2seq attn-ntm attn-caption attn-memnet attn-data)

# The deterministic collectives (lib/dist) and the data-parallel step (train/data_parallel), run
# on ranks that are threads of one process (a communicator written in the test), so that they are
# tested with or without MPI.
attn_add_test(test_dist SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dist.cpp)

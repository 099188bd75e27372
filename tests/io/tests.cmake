attn_add_test(test_io SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_hdf5_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_hdf5_damage.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_output_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/h5py_like.cpp
  LIBS attnlab_hdf5)

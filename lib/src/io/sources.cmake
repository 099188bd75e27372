list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/hdf5_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/config_reader.cpp)

list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/hdf5_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hdf5_open.cpp
  ${CMAKE_CURRENT_LIST_DIR}/output_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hdf5_structure.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hdf5_tensors.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hdf5_strings.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hdf5_vlen.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hdf5_checksum.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hdf5_attributes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/config_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/config_limits.cpp)

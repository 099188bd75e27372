# The models layer is written in parts (one file list per model family); each part lists its sources.
list(APPEND ATTN_SOURCES ${CMAKE_CURRENT_LIST_DIR}/config_limits.cpp)
foreach(part transformer seq2seq ntm memnet captioner)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${part}.cmake)
    include(${CMAKE_CURRENT_LIST_DIR}/${part}.cmake)
  endif()
endforeach()

# The models area is written in parts (one test list per model family).
foreach(part transformer seq2seq ntm memnet captioner)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${part}.cmake)
    include(${CMAKE_CURRENT_LIST_DIR}/${part}.cmake)
  endif()
endforeach()

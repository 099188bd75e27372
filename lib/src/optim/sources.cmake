list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/optimizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sgd.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rmsprop.cpp
  ${CMAKE_CURRENT_LIST_DIR}/adam.cpp
  ${CMAKE_CURRENT_LIST_DIR}/clip.cpp
  ${CMAKE_CURRENT_LIST_DIR}/schedule.cpp)
# sqrt in the update loops vectorises only when it need not set errno (we never read errno).
set_source_files_properties(
  ${CMAKE_CURRENT_LIST_DIR}/rmsprop.cpp ${CMAKE_CURRENT_LIST_DIR}/adam.cpp
  PROPERTIES COMPILE_OPTIONS -fno-math-errno)

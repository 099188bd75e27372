# The communicator and its deterministic collectives; the world is MPI's when the build has it
# (ATTN_HAVE_MPI, cmake/Dependencies.cmake), else a single process.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/communicator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/world.cpp)
if(ATTN_HAVE_MPI)
  list(APPEND ATTN_SOURCES ${CMAKE_CURRENT_LIST_DIR}/mpi_world.cpp)
  # mpi.h for this one file only: MPI's folders and flags stay off every other source's command
  # line (lib/CMakeLists.txt links the library). The C API only: the deprecated C++ bindings that
  # mpi.h would pull in draw -Wcast-function-type.
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/mpi_world.cpp PROPERTIES
    INCLUDE_DIRECTORIES "${MPI_C_INCLUDE_DIRS}"
    COMPILE_DEFINITIONS "${MPI_C_COMPILE_DEFINITIONS};OMPI_SKIP_MPICXX=1;MPICH_SKIP_MPICXX=1"
    COMPILE_OPTIONS "${MPI_C_COMPILE_OPTIONS}")
else()
  list(APPEND ATTN_SOURCES ${CMAKE_CURRENT_LIST_DIR}/single_world.cpp)
endif()

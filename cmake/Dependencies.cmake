# Locates the system packages attnlab builds against. Each missing one stops configuration
# with the Debian package that provides it (`make -f Makefile.scripts deps` installs them all).

# OpenBLAS, the OpenMP build: the library's own loops use OpenMP too, so BLAS and our loops
# share one thread pool and never oversubscribe the cores (see docs/ARCHITECTURE.md).
find_path(ATTN_CBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/aarch64-linux-gnu/openblas-openmp
  NO_DEFAULT_PATH)
find_library(ATTN_OPENBLAS_LIBRARY openblas
  PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp
  NO_DEFAULT_PATH)
if(NOT ATTN_CBLAS_INCLUDE_DIR OR NOT ATTN_OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS (OpenMP build) not found: install the Debian package libopenblas-openmp-dev")
endif()
if(NOT TARGET attnlab_openblas)
  add_library(attnlab_openblas UNKNOWN IMPORTED)
  set_target_properties(attnlab_openblas PROPERTIES
    IMPORTED_LOCATION "${ATTN_OPENBLAS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ATTN_CBLAS_INCLUDE_DIR}")
endif()

find_package(OpenMP QUIET)
if(NOT OpenMP_CXX_FOUND)
  message(FATAL_ERROR "OpenMP not found: install the Debian package g++ (libgomp)")
endif()

set(HDF5_PREFER_PARALLEL OFF)
find_package(HDF5 QUIET COMPONENTS C)
if(NOT HDF5_FOUND)
  message(FATAL_ERROR "HDF5 not found: install the Debian package libhdf5-dev")
endif()
if(NOT TARGET attnlab_hdf5)
  add_library(attnlab_hdf5 INTERFACE IMPORTED)
  set_target_properties(attnlab_hdf5 PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${HDF5_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${HDF5_C_LIBRARIES}"
    INTERFACE_COMPILE_DEFINITIONS "${HDF5_DEFINITIONS}")
endif()

# SentencePiece (Kudo & Richardson 2018) for subword vocabularies (lib/src/data/subword.cpp): its
# processor to apply models and its trainer to make them; Debian's libsentencepiece-dev.
find_path(ATTN_SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h)
find_library(ATTN_SENTENCEPIECE_LIBRARY sentencepiece)
find_library(ATTN_SENTENCEPIECE_TRAIN_LIBRARY sentencepiece_train)
if(NOT ATTN_SENTENCEPIECE_INCLUDE_DIR OR NOT ATTN_SENTENCEPIECE_LIBRARY OR NOT ATTN_SENTENCEPIECE_TRAIN_LIBRARY)
  message(FATAL_ERROR "SentencePiece not found: install the Debian package libsentencepiece-dev")
endif()
if(NOT TARGET attnlab_sentencepiece)
  add_library(attnlab_sentencepiece INTERFACE IMPORTED)
  set_target_properties(attnlab_sentencepiece PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${ATTN_SENTENCEPIECE_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${ATTN_SENTENCEPIECE_TRAIN_LIBRARY};${ATTN_SENTENCEPIECE_LIBRARY}")
endif()

# MPI (Open MPI: the Debian packages openmpi-bin and libopenmpi-dev) for data-parallel training
# over several processes (lib/src/dist/). ATTN_MPI: AUTO uses it when found, ON requires it, OFF
# builds without it; without MPI the tools train as one process and refuse to run under mpirun
# with several ranks.
set(ATTN_MPI AUTO CACHE STRING "Data-parallel training over MPI: AUTO (when found), ON or OFF")
set_property(CACHE ATTN_MPI PROPERTY STRINGS AUTO ON OFF)
set(ATTN_HAVE_MPI OFF)
if(ATTN_MPI STREQUAL "ON" OR ATTN_MPI STREQUAL "AUTO")
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(ATTN_HAVE_MPI ON)
  elseif(ATTN_MPI STREQUAL "ON")
    message(FATAL_ERROR "MPI not found (ATTN_MPI=ON): install the Debian packages openmpi-bin and libopenmpi-dev, "
                        "or configure with -DATTN_MPI=OFF")
  endif()
elseif(NOT ATTN_MPI STREQUAL "OFF")
  message(FATAL_ERROR "ATTN_MPI must be AUTO, ON or OFF, got '${ATTN_MPI}'")
endif()
message(STATUS "attnlab: data-parallel training over MPI: ${ATTN_HAVE_MPI}")

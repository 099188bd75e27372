# Model files read without attnlab: tests/formats/reload.py (h5py and numpy only, through $PYTHON,
# default /usr/bin/python3) is the shared core, and each family's numpy model is its module
# tests/families/<family>/reload.py, imported for every family of cmake/Families.cmake; each
# family's cases (its models trained by its tool, their numbers reproduced) are its
# tests/families/<family>/test_reload.cpp, through tests/support/reload_support.hpp. Here, what is
# not one family's: `reload.py --kinds` must list every model kind of every family of the registry
# ([integration]). Every such case is named "formats: ...", so `ctest -R formats` runs them all.
attn_add_test(test_formats SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_formats.cpp)

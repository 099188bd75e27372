# What every model family must do, for each family of the registry on its conformance recipe: its
# parts exist, it trains, resumes to the same bits (from a run that ended, and from the newest
# checkpoint of one killed by SIGKILL inside an epoch), its split readers refuse an empty /train,
# and its model files are read by its loader and attn-data info and refused by the other families';
# what every writer of every tool must do (refuse an output that is one of its inputs); and the
# library's layers as docs/ARCHITECTURE.md lists them.
attn_add_test(test_conformance SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_families.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_kill_resume.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_writers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_layers.cpp)
target_compile_definitions(test_conformance PRIVATE ATTN_TESTS_DIR="${PROJECT_SOURCE_DIR}/tests")
attn_tests_run_tools(test_conformance attn-data attn-bleu attn-complexity attn-plot)
foreach(family IN LISTS ATTN_FAMILIES)
  attn_tests_run_tools(test_conformance attn-${family})
endforeach()
# GCC 12 warns that std::regex's std::function members "may be used uninitialized" in the ASan
# build (-O2 with -fsanitize=address): a false positive inside libstdc++ that -DATTN_WERROR=ON
# would turn into a build error. Only test_layers.cpp uses <regex>.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/test_layers.cpp PROPERTIES COMPILE_OPTIONS -Wno-maybe-uninitialized)
endif()

# The registry of the families (attn/families/registry.hpp), generated from cmake/Families.cmake:
# each family's folder defines attn::<family>::family() in its family.cpp.
set(ATTN_FAMILY_DECLARATIONS "")
set(ATTN_FAMILY_ENTRIES "")
foreach(family IN LISTS ATTN_FAMILIES)
  string(APPEND ATTN_FAMILY_DECLARATIONS "namespace ${family} {\nfamilies::Family family();\n}\n")
  string(APPEND ATTN_FAMILY_ENTRIES "      ${family}::family(),\n")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/registry.cpp.in ${CMAKE_CURRENT_BINARY_DIR}/families/registry.cpp @ONLY)
list(APPEND ATTN_SOURCES ${CMAKE_CURRENT_BINARY_DIR}/families/registry.cpp)

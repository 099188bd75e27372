# The model families: the one list a family joins. Each name is a folder of its own code,
# lib/include/attn/families/<name>/ and lib/src/families/<name>/ (built from its sources.cmake),
# its tool apps/<name>/ (attn-<name>) and its tests tests/families/<name>/. The library's
# registry (attn/families/registry.hpp) is generated from this list, and every conformance test
# that must cover all families iterates over the registry (docs/ARCHITECTURE.md, "Adding a model
# family").
set(ATTN_FAMILIES transformer seq2seq ntm memnet caption)

# attn_include(<file>): include(<file>), or stop configuring when it is missing: a misspelt part
# must not build nothing and say nothing.
macro(attn_include file)
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "attnlab: ${file} is missing (listed by ${CMAKE_CURRENT_LIST_FILE})")
  endif()
  include(${file})
endmacro()

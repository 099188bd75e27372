attn_add_test(test_complexity SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_complexity.cpp)

# The [cli] cases run the tool itself: build it first when the tests are built.
if(TARGET attn-complexity)
  attn_add_test(test_attn_complexity SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/test_attn_complexity.cpp)
  add_dependencies(test_attn_complexity attn-complexity)
endif()

attn_add_test(test_complexity SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_complexity.cpp)
attn_add_test(test_attn_complexity SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_attn_complexity.cpp)
add_dependencies(test_attn_complexity attn-complexity)   # the [cli] cases run the tool itself

attn_add_test(test_blas SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_blas.cpp)

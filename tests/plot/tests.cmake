attn_add_test(test_plot
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/png_pixels.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_plot_basics.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_plot_charts.cpp
  LIBS attn_plot PkgConfig::ATTN_CAIRO)

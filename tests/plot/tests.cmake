# The plot library in process ([unit], [io]) and the attn-plot tool run as an executable ([cli]).
attn_add_test(test_plot
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/png_pixels.cpp
          ${CMAKE_CURRENT_LIST_DIR}/plot_fixture.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_plot_basics.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_plot_charts.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_plot_inputs.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_plot_refinement.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_attn_plot.cpp
  LIBS attn_plot PkgConfig::ATTN_CAIRO)
attn_tests_run_tools(test_plot attn-plot)

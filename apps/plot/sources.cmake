# attn-plot: pictures of attention from attnlab HDF5 files (lib/plot, target attn_plot).
attn_add_tool(attn-plot SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plot_options.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cmd_heatmap.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cmd_weights.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cmd_overlay.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cmd_curve.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cmd_table.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cmd_refinement.cpp)
target_link_libraries(attn-plot PRIVATE attn_plot)

# The ops layer is written in parts (one file list per op family); each part lists its sources.
foreach(part basic softmax_loss recurrent_conv attention)
  attn_include(${CMAKE_CURRENT_LIST_DIR}/part_${part}.cmake)
endforeach()

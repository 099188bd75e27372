foreach(part basic softmax_loss recurrent_conv attention)
  attn_include(${CMAKE_CURRENT_LIST_DIR}/part_${part}.cmake)
endforeach()

list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/grad_ready.cpp
  ${CMAKE_CURRENT_LIST_DIR}/init.cpp
  ${CMAKE_CURRENT_LIST_DIR}/layers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rnn.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attention_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/multi_head_attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/positional_encoding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/transformer_layers.cpp)

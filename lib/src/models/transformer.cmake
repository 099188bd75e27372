# The Transformer model (encoder-decoder, decoder-only LM, encoder-only masked LM).
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/transformer_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/transformer_layers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/transformer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/transformer_classifier.cpp)

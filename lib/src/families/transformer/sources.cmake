# families/transformer: the Transformer (encoder-decoder, decoder-only LM, encoder-only masked LM,
# non-autoregressive CMLM with mask-predict),
# its fine-tuned classifier (GPT's and BERT's second stage) and their labelled data sets.
list(APPEND ATTN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nat.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/labelled_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/classifier.cpp
  ${CMAKE_CURRENT_LIST_DIR}/classifier_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/family.cpp)

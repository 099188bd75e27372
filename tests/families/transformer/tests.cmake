# families/transformer: the model (gradient checks, the masks, learning to reverse), its decoding
# (and the non-autoregressive cmlm with mask-predict: test_nat, test_nat_cli; trained on a
# teacher's distilled translations: test_distil_cli), on subword units (test_subword_cli),
# the fine-tuned classifier and its labelled data sets; attn-transformer run as a user would,
# chained with attn-data and attn-bleu through files and standard streams, the pre-train ->
# finetune -> classify chain, and the output and resume guards ([cli]); its model files
# (transformer and transformer-classifier) read without attnlab by tests/formats/reload.py with
# this family's reload.py ([integration], "formats: ...").
attn_add_test(test_transformer SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_nat.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_classifier.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_classifier_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_labelled_data.cpp)
attn_add_test(test_transformer_cli SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_nat_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_distil_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_subword_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_guards_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_finetune_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_reload.cpp)
attn_tests_run_tools(test_transformer_cli attn-transformer attn-data attn-bleu)

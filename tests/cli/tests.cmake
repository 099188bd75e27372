# apps/common in process ([unit][cli-common]) and the data and BLEU tools run as executables
# ([cli]): attn-data's generators and importers (bAbI and the captioning sets included), attn-bleu.
find_package(ZLIB REQUIRED)
attn_add_test(test_cli SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cli_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_attn_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_text_tools.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_babi_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_caption_cli.cpp
  LIBS attn_cli ZLIB::ZLIB)   # zlib: the MNIST fixtures are gzip
# The [cli] cases run the tools: build them first when the tests are built.
add_dependencies(test_cli attn-data attn-bleu)

# attn-bleu: corpus BLEU of predictions against references (lib/metrics).
attn_add_tool(attn-bleu SOURCES ${CMAKE_CURRENT_LIST_DIR}/main.cpp)
target_link_libraries(attn-bleu PRIVATE attn_datasets)

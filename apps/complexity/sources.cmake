# attn-complexity: measures attention, recurrent and convolutional layers (lib/complexity).
attn_add_tool(attn-complexity SOURCES ${CMAKE_CURRENT_LIST_DIR}/main.cpp)

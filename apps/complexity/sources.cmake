# attn-complexity needs apps/common (attn_cli); without it (a partial checkout) it is skipped.
if(TARGET attn_cli)
  attn_add_tool(attn-complexity SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/main.cpp)
endif()

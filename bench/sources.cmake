# Benchmark programs, one executable bench_<name> each; bench/run.sh runs every one it finds.
# Add yours with one line: attn_add_bench(<name> SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_<name>.cpp)

# attn_add_bench(<name> SOURCES ... [LIBS ...]): the executable bench_<name>, linked with libattn
# and Google Benchmark, with bench/ on the include path for bench_util.hpp.
function(attn_add_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(bench_${name} ${ARG_SOURCES})
  target_include_directories(bench_${name} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  target_link_libraries(bench_${name} PRIVATE attn benchmark::benchmark attn_warnings ${ARG_LIBS})
endfunction()

attn_add_bench(gemm SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_gemm.cpp)
attn_add_bench(linear SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_linear.cpp)
attn_add_bench(attention SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_attention.cpp)
attn_add_bench(rnn SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_rnn.cpp)
attn_add_bench(conv SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_conv.cpp)
attn_add_bench(rows SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_rows.cpp)
attn_add_bench(embedding_bag SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_embedding_bag.cpp)

# Whole-model speed programs perf_<name> (a plain main printing one key=value line), run by
# experiments/perf/<name>/run.sh beside the same model in PyTorch; bench/run.sh skips them.
function(attn_add_perf name)
  add_executable(perf_${name} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/perf_${name}.cpp)
  target_include_directories(perf_${name} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  target_link_libraries(perf_${name} PRIVATE attn benchmark::benchmark attn_warnings)
endfunction()

attn_add_perf(transformer)
attn_add_perf(seq2seq)
attn_add_perf(ntm)
attn_add_perf(memnet)
attn_add_perf(caption)
attn_add_perf(mpi)
target_link_libraries(perf_ntm PRIVATE attn_datasets)   # make_copy: the copy task's sequences

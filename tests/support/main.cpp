// The Catch2 runner shared by every test executable.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

#include "attn/core/threading.hpp"

// Every test runs on one thread: `ctest -j N` gives each test process a core of its own, and
// two multi-threaded OpenMP processes sharing cores spin against each other (a 15 s test took
// over 300 s that way). The setting is made here rather than as a CTest ENVIRONMENT list,
// which catch_discover_tests splits at its semicolons. The variables reach the tools that CLI
// tests launch; tests that need several threads ask for them with attn::set_num_threads.
int main(int argc, char* argv[]) {
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  attn::set_num_threads(1);
  return Catch::Session().run(argc, argv);
}

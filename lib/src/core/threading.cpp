// The library's thread count: OpenMP's setting, plus whatever layers above core keep in step with
// it (the BLAS seam registers OpenBLAS's setter), so that core calls nothing above itself; and the
// number of parts work is divided into, which only set_num_threads moves.
#include "attn/core/threading.hpp"

#include <omp.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "attn/core/error.hpp"

namespace attn {
namespace {

// Function-local statics, so that a hook registered during another file's static initialisation
// finds them constructed whatever the order of initialisation.
std::mutex& hooks_mutex() {
  static std::mutex m;
  return m;
}

std::vector<void (*)(int)>& hooks() {
  static std::vector<void (*)(int)> h;
  return h;
}

std::atomic<int>& parts() {
  static std::atomic<int> p{omp_get_max_threads()};
  return p;
}

void run_threads(int n) {
  omp_set_num_threads(n);
  const std::lock_guard<std::mutex> lock(hooks_mutex());
  for (auto* hook : hooks()) hook(n);
}

}  // namespace

void set_num_threads(int n) {
  if (n < 1) throw ConfigError("thread count must be >= 1, got " + std::to_string(n));
  parts().store(n, std::memory_order_relaxed);
  run_threads(n);
}

void set_running_threads(int n) {
  if (n < 1 || n > num_parts())
    throw ConfigError("running threads must be in [1, " + std::to_string(num_parts()) + "], got " + std::to_string(n));
  run_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

int num_parts() { return parts().load(std::memory_order_relaxed); }

bool in_parallel_region() { return omp_get_level() > 0; }

void on_set_num_threads(void (*hook)(int)) {
  const std::lock_guard<std::mutex> lock(hooks_mutex());
  hooks().push_back(hook);
}

}  // namespace attn

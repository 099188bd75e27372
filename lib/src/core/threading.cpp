#include "attn/core/threading.hpp"

#include <omp.h>

#include <string>

#include "attn/blas/blas.hpp"
#include "attn/core/error.hpp"

namespace attn {

void set_num_threads(int n) {
  if (n < 1) throw ConfigError("thread count must be >= 1, got " + std::to_string(n));
  omp_set_num_threads(n);
  blas::set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace attn

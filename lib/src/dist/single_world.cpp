// The world of a build without MPI: always a single process (world.hpp).
#include <string>

#include "attn/core/error.hpp"
#include "attn/dist/world.hpp"
#include "world_impl.hpp"

namespace attn::dist {

bool built_with_mpi() { return false; }

Environment::Environment() {
  if (const int ranks = detail::launched_ranks(); ranks > 1)
    throw ConfigError("started by mpirun with " + std::to_string(ranks) +
                      " ranks, but this attnlab was built without MPI (reconfigure with -DATTN_MPI=ON after "
                      "installing openmpi-bin and libopenmpi-dev); every rank would train the whole run alone");
}

Environment::~Environment() = default;

void Environment::end_job(int) {}

}  // namespace attn::dist

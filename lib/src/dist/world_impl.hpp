// Private to lib/src/dist: how an Environment installs its communicator as the world.
#pragma once
#include "attn/dist/communicator.hpp"

namespace attn::dist::detail {

// The world communicator from now on; nullptr: the single process again.
void set_world(Communicator* comm);

// The number of ranks an MPI launcher says this process belongs to (OMPI_COMM_WORLD_SIZE, or 1
// under PMIX_RANK alone, where the size is MPI's to tell); 0: not started by a launcher.
int launched_ranks();

}  // namespace attn::dist::detail

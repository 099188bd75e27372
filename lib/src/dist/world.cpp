// The world communicator's storage and launcher detection, shared by the MPI and the single-
// process builds (world.hpp).
#include <cstdlib>
#include <string>

#include "attn/dist/world.hpp"
#include "world_impl.hpp"

namespace attn::dist {
namespace {

SingleProcess& single() {
  static SingleProcess s;
  return s;
}
Communicator* g_world = nullptr;

}  // namespace

Communicator& world() { return g_world ? *g_world : single(); }

namespace detail {

void set_world(Communicator* comm) { g_world = comm; }

int launched_ranks() {
  if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE")) {
    const int ranks = std::atoi(n);
    return ranks > 0 ? ranks : 1;
  }
  if (std::getenv("PMIX_RANK") || std::getenv("PMI_RANK")) return 1;
  return 0;
}

}  // namespace detail
}  // namespace attn::dist

// The process's place in a data-parallel job: the world communicator, and the MPI session behind
// it when there is one.
//
// A tool makes one Environment at the start of main (cli::dispatch does). When the build has MPI
// (cmake -DATTN_MPI=AUTO|ON) and the process was started by an MPI launcher (Open MPI's mpirun
// sets OMPI_COMM_WORLD_SIZE, PMIx launchers such as srun set PMIX_RANK), it initialises MPI and
// world() becomes the MPI world; otherwise world() is a single process and MPI is never touched
// (a plain run pays nothing and needs no launcher). A build without MPI started by mpirun with
// several ranks refuses (ConfigError) rather than running N independent copies that would write
// the same files.
#pragma once
#include "attn/dist/communicator.hpp"

namespace attn::dist {

// Whether this libattn was built with MPI.
bool built_with_mpi();

// The world communicator: the MPI world inside an Environment that initialised MPI, else a
// single process.
Communicator& world();

class Environment {
 public:
  Environment();    // ConfigError: started with several ranks by a build without MPI; Error: MPI failed
  ~Environment();   // finalises MPI (unless end_job ran)
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  // For a tool whose verb failed on this rank: ends every rank of the job (MPI_Abort) with `code`
  // as the launcher's exit status, so that the others do not wait for this one. The caller (the
  // tool's main, never the library) calls it only when world().size() > 1; with one rank it
  // returns.
  void end_job(int code);

 private:
  bool mpi_ = false;
};

}  // namespace attn::dist

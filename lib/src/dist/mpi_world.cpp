// The world of a build with MPI (world.hpp): MPI initialised only when an MPI launcher started the
// process, and a Communicator whose exchange is a pair of non-blocking point-to-point messages
// polled against a deadline. The only file that includes mpi.h.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "attn/core/error.hpp"
#include "attn/dist/world.hpp"
#include "world_impl.hpp"

namespace attn::dist {
namespace {

constexpr int kTag = 0x6174;                    // "at"
constexpr size_t kMaxMessage = size_t{1} << 30; // MPI counts are int: longer exchanges go in pieces

std::string mpi_message(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw Error(std::string("dist: ") + what + " failed: " + mpi_message(code));
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    // A communicator of our own, so that no message of ours can match another library's.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiCommunicator() override { MPI_Comm_free(&comm_); }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void set_timeout(double seconds) override {
    if (!(seconds > 0)) throw ConfigError("dist: the timeout must be > 0 seconds, got " + std::to_string(seconds));
    timeout_ = seconds;
  }
  double timeout() const override { return timeout_; }

  void exchange(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) override {
    const auto t0 = std::chrono::steady_clock::now();
    size_t done_send = 0, done_recv = 0;
    do {   // in pieces of at most kMaxMessage bytes, both directions advancing together
      const size_t ns = std::min(kMaxMessage, send.size() - done_send);
      const size_t nr = std::min(kMaxMessage, recv.size() - done_recv);
      MPI_Request req[2];
      check(MPI_Irecv(recv.data() + done_recv, static_cast<int>(nr), MPI_BYTE, from, kTag, comm_, &req[0]),
            "MPI_Irecv");
      check(MPI_Isend(send.data() + done_send, static_cast<int>(ns), MPI_BYTE, to, kTag, comm_, &req[1]),
            "MPI_Isend");
      wait(req, t0, to, from);
      done_send += ns;
      done_recv += nr;
    } while (done_send < send.size() || done_recv < recv.size());
    traffic_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    traffic_.bytes_sent += static_cast<int64_t>(send.size());
    ++traffic_.exchanges;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_ = 600;

  // Polls both requests until they are done. Spins for the first 10 ms (a peer in step with us
  // answers within microseconds, and MPI progresses a message only while polled), then polls
  // every 50 us so that a rank waiting for a slow peer (one writing a checkpoint) leaves the core
  // to others; throws once the exchange has waited timeout_ seconds.
  void wait(MPI_Request req[2], std::chrono::steady_clock::time_point t0, int to, int from) {
    using clock = std::chrono::steady_clock;
    for (;;) {
      int done = 0;
      check(MPI_Testall(2, req, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (done) return;
      const double waited = std::chrono::duration<double>(clock::now() - t0).count();
      if (waited > timeout_)
        throw Error("dist: rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " waited " +
                    std::to_string(static_cast<int64_t>(waited)) + " s for rank " + std::to_string(from) +
                    (from == to ? "" : " and rank " + std::to_string(to)) +
                    " without an answer: a rank has died or hung; stopping the job");
      if (waited > 0.01) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
};

std::unique_ptr<MpiCommunicator> g_mpi;

}  // namespace

bool built_with_mpi() { return true; }

Environment::Environment() {
  if (detail::launched_ranks() == 0) return;   // a plain run: MPI untouched
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;                     // someone else's session (a test harness)
  int provided = 0;
  // FUNNELED: only the main thread calls MPI; OpenMP's threads compute.
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  mpi_ = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  g_mpi = std::make_unique<MpiCommunicator>();
  detail::set_world(g_mpi.get());
}

Environment::~Environment() {
  if (!mpi_) return;
  detail::set_world(nullptr);
  g_mpi.reset();
  MPI_Finalize();
}

void Environment::end_job(int code) {
  if (!mpi_ || world().size() == 1) return;
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);   // MPI_Abort does not return; should it, this rank still must not linger
}

}  // namespace attn::dist

// The world of a build with MPI (world.hpp): MPI initialised only when an MPI launcher started the
// process, and a Communicator whose exchanges are non-blocking point-to-point messages, tested by
// the collectives (communicator.cpp) against a deadline. The only file that includes mpi.h.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/dist/world.hpp"
#include "world_impl.hpp"

namespace attn::dist {
namespace {

constexpr int kTagBase = 0x6000;                // ours: kTagBase + 0..kMaxTag, below MPI_TAG_UB's least 32767
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

  std::unique_ptr<Exchange> start_exchange(int to, std::span<const std::byte> send, int from,
                                           std::span<std::byte> recv, int tag) override {
    if (tag < 0 || tag > kMaxTag) throw Error("dist: tag " + std::to_string(tag) + " outside 0.." + std::to_string(kMaxTag));
    auto e = std::make_unique<MpiExchange>(to, from);
    // In pieces of at most kMaxMessage bytes (MPI counts are int), all posted at once: messages of
    // one tag between two ranks match in order. An empty buffer is one empty message.
    auto pieces = [](size_t bytes) { return std::max<size_t>(1, (bytes + kMaxMessage - 1) / kMaxMessage); };
    for (size_t k = 0; k < pieces(recv.size()); ++k) {
      const size_t at = k * kMaxMessage, n = std::min(kMaxMessage, recv.size() - at);
      check(MPI_Irecv(recv.data() + at, static_cast<int>(n), MPI_BYTE, from, kTagBase + tag, comm_, &e->add()),
            "MPI_Irecv");
    }
    for (size_t k = 0; k < pieces(send.size()); ++k) {
      const size_t at = k * kMaxMessage, n = std::min(kMaxMessage, send.size() - at);
      check(MPI_Isend(send.data() + at, static_cast<int>(n), MPI_BYTE, to, kTagBase + tag, comm_, &e->add()),
            "MPI_Isend");
    }
    traffic_.bytes_sent += static_cast<int64_t>(send.size());
    ++traffic_.exchanges;
    return e;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_ = 600;

  // A started exchange's requests. One left unfinished (its wait threw: a peer died or hung) is
  // abandoned, not cancelled: the job is ending (cli::dispatch aborts it).
  struct MpiExchange final : Exchange {
    MpiExchange(int to, int from) : Exchange(to, from) {}
    std::vector<MPI_Request> requests;
    bool done = false;
    MPI_Request& add() { return requests.emplace_back(MPI_REQUEST_NULL); }
    bool test() override {
      if (done) return true;
      int flag = 0;
      check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag, MPI_STATUSES_IGNORE),
            "MPI_Testall");
      done = flag != 0;
      return done;
    }
  };
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

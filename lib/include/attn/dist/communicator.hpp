// The ranks of a data-parallel job and the few collectives training needs, built on one
// point-to-point primitive so that their order of arithmetic is ours, not the MPI library's.
//
// A Communicator is rank r of N processes that can `exchange` bytes with each other: send to one
// rank and receive from another at once (the step of a ring), either waiting for it (exchange) or
// started now and tested later (start_exchange), so that other work runs while the bytes travel.
// Everything else is written once on top of it (communicator.cpp):
//   RingAllreduce   ring reduce-scatter + all-gather (Patarasuk & Yuan 2009): each rank sends
//                   2 (N-1)/N of the buffer, the bandwidth optimum. Chunk c is summed in the fixed
//                   order ((a_c + a_{c+1}) + ...) + a_{c-1} (rank indices mod N) and then copied to
//                   every rank, so the result is the same bits on every rank and in every run with N
//                   ranks, however its steps interleave with other work. MPI_Allreduce with MPI_SUM
//                   promises neither: Open MPI picks its algorithm (and so the association of the
//                   float sums) by message size and rank count. allreduce_sum runs one to the end.
//   allgather       every rank's equal-sized block, in rank order, on every rank (a ring);
//                   allgather_strings the same for texts of any length.
// With one rank both return at once, so a single process pays nothing.
//
// The world (world.hpp) is an MPI communicator when the tool was started by an MPI launcher
// (mpirun, srun), else a single process. A wait for peers longer than the communicator's timeout
// throws attn::Error naming the rank waited for as stalled and this one as waiting, so a rank that
// hung (or died without the launcher noticing) stops the others instead of blocking them forever.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace attn::dist {

// Communication done so far by this rank: time spent waiting for exchanges to finish (waiting
// for slower peers included), bytes sent and exchanges started.
struct Traffic {
  double seconds = 0;
  int64_t bytes_sent = 0;
  int64_t exchanges = 0;
};

// Tags keep concurrent exchanges between the same two ranks apart: 0 is the blocking
// collectives', the rest are free for overlapped ones (a ring per gradient bucket).
inline constexpr int kMaxTag = 4095;

// An exchange in flight (Communicator::start_exchange).
class Exchange {
 public:
  Exchange(int to, int from) : to(to), from(from) {}
  virtual ~Exchange() = default;
  // True once both the send and the receive are done (and from then on); never blocks.
  virtual bool test() = 0;
  const int to, from;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool is_root() const { return rank() == 0; }

  // Starts sending `send` to rank `to` and receiving exactly recv.size() bytes from rank `from`
  // (either may be empty); both buffers must stay as they are until test() says done. Exchanges
  // between two ranks with the same tag (0..kMaxTag) are matched in the order they were started.
  virtual std::unique_ptr<Exchange> start_exchange(int to, std::span<const std::byte> send, int from,
                                                   std::span<std::byte> recv, int tag) = 0;

  // start_exchange with tag 0, then wait: returns when both are done.
  void exchange(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv);
  // Returns when `e` is done; throws attn::Error when that takes longer than the timeout.
  void wait(Exchange& e);

  // Seconds a wait for peers may last before it throws (> 0).
  virtual void set_timeout(double seconds) = 0;
  virtual double timeout() const = 0;

  const Traffic& traffic() const { return traffic_; }

 protected:
  Traffic traffic_;
  friend class Waiter;
};

// How a rank waits for its peers: call pause() between polls of what it waits for. It spins for
// the first 10 ms (a peer in step with us answers within microseconds, and MPI moves a message
// only while polled), then sleeps 50 us between polls so that a rank waiting for a slow peer (one
// writing a checkpoint) leaves the core to others; past the communicator's timeout it throws,
// naming the ranks waited for as stalled and this rank as the waiting one ("dist: rank 1 of 2
// stalled (...): rank 0, the waiting rank, had no answer from it for 600 s"): the waiting rank
// prints it, under a prefix with its own number, so it must not read as the culprit. Its time is
// added to the communicator's traffic().seconds. The timeout counts only time this rank ran: a
// gap of kOwnStall or more between two polls is a stall of its own (SIGSTOP, a suspended machine),
// not its peers' silence, and is left out, so that a stalled rank resumed (mpirun sends SIGCONT
// before ending a job) does not report that it waited for the ranks that were waiting for it.
class Waiter {
 public:
  explicit Waiter(Communicator& comm);
  ~Waiter();
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;
  void pause(int to, int from);

 private:
  static constexpr double kOwnStall = 0.25;   // seconds; polls come every 50 us
  Communicator& comm_;
  double start_, last_;   // the wait's start, the previous poll
  double waited_ = 0;     // seconds counted against the timeout
};

// A sum over the ranks of `data`, in place, started now and advanced by progress() as messages
// arrive: the ring described above, step by step, so that a caller can overlap it with other
// work. `data` must stay alive and untouched (by this rank) until done; every rank passes the
// same length and tag. The result does not depend on when progress() is called. For float
// (gradients) and double (counts).
template <class T>
class RingAllreduce {
 public:
  // `scratch`, when given, holds the chunk a reduce-scatter step receives (grown as needed) and is
  // kept by the caller for its next ring: a fresh buffer of megabytes costs a page fault per 4 KiB
  // each time, and freeing it a munmap.
  RingAllreduce(Communicator& comm, std::span<T> data, int tag, std::vector<T>* scratch = nullptr);
  RingAllreduce(const RingAllreduce&) = delete;
  RingAllreduce& operator=(const RingAllreduce&) = delete;
  // Advances as far as the messages that have arrived allow, without waiting; true once done.
  bool progress();
  // Progresses until done (Waiter's policy and timeout).
  void finish();
  // waiter.pause() naming the ranks the step in flight waits for (when not done).
  void pause(Waiter& waiter) const;
  int tag() const { return tag_; }

 private:
  Communicator& comm_;
  std::span<T> data_;
  int tag_;
  int step_ = 0;                        // 0 .. N-2 reduce-scatter, N-1 .. 2N-3 all-gather
  std::vector<T> own_;                  // the scratch, when the caller has none
  std::vector<T>* incoming_;            // a reduce-scatter step's chunk from the left
  std::unique_ptr<Exchange> current_;   // the step in flight
  void start_step();
};
RingAllreduce(Communicator&, std::span<float>, int) -> RingAllreduce<float>;
RingAllreduce(Communicator&, std::span<double>, int) -> RingAllreduce<double>;

// Sums `data` over the ranks in place; every rank must pass the same length. Deterministic as
// said above; every rank gets the same bits.
void allreduce_sum(Communicator& comm, std::span<float> data);

// Every rank's `mine` (the same size on every rank), concatenated in rank order.
std::vector<std::byte> allgather(Communicator& comm, std::span<const std::byte> mine);

// allgather of doubles: size() * mine.size() values, rank r's at [r * mine.size(), ...).
std::vector<double> allgather(Communicator& comm, std::span<const double> mine);

// Every rank's `mine`, of any length, in rank order (the lengths first, then the texts padded to
// the longest): how ranks compare what they were started with (train/rank_agreement.hpp).
std::vector<std::string> allgather_strings(Communicator& comm, const std::string& mine);

// A communicator of one rank: exchanges nothing (to and from itself, which only a size-1 ring
// asks for, copy send into recv).
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::unique_ptr<Exchange> start_exchange(int to, std::span<const std::byte> send, int from,
                                           std::span<std::byte> recv, int tag) override;
  void set_timeout(double seconds) override { timeout_ = seconds; }
  double timeout() const override { return timeout_; }

 private:
  double timeout_ = 600;
};

}  // namespace attn::dist

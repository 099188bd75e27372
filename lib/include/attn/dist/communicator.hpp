// The ranks of a data-parallel job and the few collectives training needs, built on one
// point-to-point primitive so that their order of arithmetic is ours, not the MPI library's.
//
// A Communicator is rank r of N processes that can `exchange` bytes with each other: send to one
// rank and receive from another at once (the step of a ring). Everything else is written once on
// top of it (communicator.cpp):
//   allreduce_sum   ring reduce-scatter + all-gather (Patarasuk & Yuan 2009): each rank sends
//                   2 (N-1)/N of the buffer, the bandwidth optimum. Chunk c is summed in the fixed
//                   order ((a_c + a_{c+1}) + ...) + a_{c-1} (rank indices mod N) and then copied to
//                   every rank, so the result is the same bits on every rank and in every run with N
//                   ranks. MPI_Allreduce with MPI_SUM promises neither: Open MPI picks its algorithm
//                   (and so the association of the float sums) by message size and rank count.
//   allgather       every rank's equal-sized block, in rank order, on every rank (a ring).
// With one rank both return at once, so a single process pays nothing.
//
// The world (world.hpp) is an MPI communicator when the tool was started by an MPI launcher
// (mpirun, srun), else a single process. An exchange that waits longer than the communicator's
// timeout for its peers throws attn::Error naming the ranks, so a rank that hung (or died without
// the launcher noticing) stops the others instead of blocking them forever.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace attn::dist {

// Communication done so far by this rank: time inside exchanges (waiting for slower peers
// included) and bytes sent.
struct Traffic {
  double seconds = 0;
  int64_t bytes_sent = 0;
  int64_t exchanges = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool is_root() const { return rank() == 0; }

  // Sends `send` to rank `to` and receives exactly recv.size() bytes from rank `from`, both at
  // once; returns when both are done (either may be empty). Throws attn::Error when they are not
  // done within the timeout.
  virtual void exchange(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) = 0;

  // Seconds an exchange may wait for its peers before it throws (> 0).
  virtual void set_timeout(double seconds) = 0;
  virtual double timeout() const = 0;

  const Traffic& traffic() const { return traffic_; }

 protected:
  Traffic traffic_;
};

// Sums `data` over the ranks in place; every rank must pass the same length. Deterministic as
// said above; every rank gets the same bits.
void allreduce_sum(Communicator& comm, std::span<float> data);

// Every rank's `mine` (the same size on every rank), concatenated in rank order.
std::vector<std::byte> allgather(Communicator& comm, std::span<const std::byte> mine);

// allgather of doubles: size() * mine.size() values, rank r's at [r * mine.size(), ...).
std::vector<double> allgather(Communicator& comm, std::span<const double> mine);

// A communicator of one rank: exchanges nothing (to and from itself, which only a size-1 ring
// asks for, copy send into recv).
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void exchange(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) override;
  void set_timeout(double seconds) override { timeout_ = seconds; }
  double timeout() const override { return timeout_; }

 private:
  double timeout_ = 600;
};

}  // namespace attn::dist

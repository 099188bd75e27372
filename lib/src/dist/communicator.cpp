// The collectives on top of Communicator::start_exchange (communicator.hpp): a ring all-reduce
// whose float sums are in a fixed order, and a ring all-gather; how a rank waits for its peers.
#include "attn/dist/communicator.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "attn/core/error.hpp"

namespace attn::dist {
namespace {

// Chunk c of N over n elements: [n c / N, n (c + 1) / N).
template <class T>
std::span<T> chunk(std::span<T> data, int c, int N) {
  const auto n = static_cast<int64_t>(data.size());
  const int64_t begin = n * c / N, end = n * (c + 1) / N;
  return data.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
}

int mod(int a, int N) { return ((a % N) + N) % N; }

using clock = std::chrono::steady_clock;

double now_s() { return std::chrono::duration<double>(clock::now().time_since_epoch()).count(); }

// An exchange a single process finished when it was started.
class Done final : public Exchange {
 public:
  Done() : Exchange(0, 0) {}
  bool test() override { return true; }
};

}  // namespace

std::unique_ptr<Exchange> SingleProcess::start_exchange(int to, std::span<const std::byte> send, int from,
                                                        std::span<std::byte> recv, int) {
  if (to != 0 || from != 0 || send.size() != recv.size())
    throw Error("dist: a single process can only exchange with itself, equal sizes");
  if (!send.empty()) std::memmove(recv.data(), send.data(), send.size());
  return std::make_unique<Done>();
}

void Communicator::exchange(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) {
  const std::unique_ptr<Exchange> e = start_exchange(to, send, from, recv, 0);
  wait(*e);
}

void Communicator::wait(Exchange& e) {
  Waiter waiter(*this);
  while (!e.test()) waiter.pause(e.to, e.from);
}

namespace {

// The stalled rank first, as the subject, and this one as the rank that waited: the line is printed
// by the waiting rank (under a prefix naming it), so a reader must not take it for the culprit.
std::string stalled_message(const Communicator& comm, int to, int from, double waited) {
  const std::string of = " of " + std::to_string(comm.size()),
                    why = "died or hung, or is busy for longer than --rank-timeout";
  const std::string stalled = from == to ? "rank " + std::to_string(from) + of + " stalled (it " + why + ")"
                                         : "rank " + std::to_string(from) + " or rank " + std::to_string(to) + of +
                                               " stalled, or a rank they wait for did (it " + why + ")";
  return "dist: " + stalled + ": rank " + std::to_string(comm.rank()) + ", the waiting rank, had no answer from " +
         (from == to ? "it" : "them") + " for " + std::to_string(static_cast<int64_t>(waited)) + " s; stopping the job";
}

}  // namespace

Waiter::Waiter(Communicator& comm) : comm_(comm), start_(now_s()), last_(start_) {}

Waiter::~Waiter() { comm_.traffic_.seconds += now_s() - start_; }

void Waiter::pause(int to, int from) {
  const double now = now_s();
  if (now - last_ < kOwnStall) waited_ += now - last_;   // else this rank was stopped: not the peers' fault
  last_ = now;
  if (waited_ > comm_.timeout()) throw Error(stalled_message(comm_, to, from, waited_));
  if (waited_ > 0.01) std::this_thread::sleep_for(std::chrono::microseconds(50));
}

template <class T>
RingAllreduce<T>::RingAllreduce(Communicator& comm, std::span<T> data, int tag, std::vector<T>* scratch)
    : comm_(comm), data_(data), tag_(tag), incoming_(scratch ? scratch : &own_) {
  if (tag < 0 || tag > kMaxTag) throw Error("dist: tag " + std::to_string(tag) + " outside 0.." + std::to_string(kMaxTag));
  if (comm_.size() == 1) return;
  const size_t need = data.size() / static_cast<size_t>(comm_.size()) + 1;
  if (incoming_->size() < need) incoming_->resize(need);
  start_step();
}

// Reduce-scatter: at step s rank r passes on chunk r - s (its own at s = 0, after that the partial
// sum it received one step before) and adds its own values to chunk r - s - 1, which arrives from
// the left holding a_c + ... + a_{r-1}. After N - 1 steps rank r holds the whole sum of chunk
// r + 1, in the order a_{r+1} + a_{r+2} + ... + a_r. All-gather (steps N-1 .. 2N-3): the finished
// chunks travel once around the ring, copied, never re-added.
template <class T>
void RingAllreduce<T>::start_step() {
  const int N = comm_.size(), r = comm_.rank();
  const int right = mod(r + 1, N), left = mod(r - 1, N);
  if (step_ < N - 1) {
    const std::span<T> out = chunk(data_, mod(r - step_, N), N), in = chunk(data_, mod(r - step_ - 1, N), N);
    current_ = comm_.start_exchange(right, std::as_bytes(out), left,
                                    std::as_writable_bytes(std::span<T>(incoming_->data(), in.size())), tag_);
  } else {
    const int s = step_ - (N - 1);
    const std::span<T> out = chunk(data_, mod(r + 1 - s, N), N), in = chunk(data_, mod(r - s, N), N);
    current_ = comm_.start_exchange(right, std::as_bytes(out), left, std::as_writable_bytes(in), tag_);
  }
}

template <class T>
bool RingAllreduce<T>::progress() {
  const int N = comm_.size(), r = comm_.rank();
  while (current_ && current_->test()) {
    if (step_ < N - 1) {
      const std::span<T> in = chunk(data_, mod(r - step_ - 1, N), N);
      const T* from = incoming_->data();
      for (size_t i = 0; i < in.size(); ++i) in[i] = from[i] + in[i];
    }
    current_.reset();
    if (++step_ < 2 * (N - 1)) start_step();
  }
  return !current_;
}

template <class T>
void RingAllreduce<T>::finish() {
  Waiter waiter(comm_);
  while (!progress()) pause(waiter);
}

template <class T>
void RingAllreduce<T>::pause(Waiter& waiter) const {
  if (current_) waiter.pause(current_->to, current_->from);
}

template class RingAllreduce<float>;
template class RingAllreduce<double>;

void allreduce_sum(Communicator& comm, std::span<float> data) { RingAllreduce(comm, data, 0).finish(); }

std::vector<std::byte> allgather(Communicator& comm, std::span<const std::byte> mine) {
  const int N = comm.size(), r = comm.rank();
  const size_t m = mine.size();
  std::vector<std::byte> all(m * static_cast<size_t>(N));
  if (m > 0) std::memcpy(all.data() + m * static_cast<size_t>(r), mine.data(), m);
  auto block = [&](int k) { return std::span<std::byte>(all.data() + m * static_cast<size_t>(k), m); };
  for (int s = 0; s < N - 1; ++s)
    comm.exchange(mod(r + 1, N), block(mod(r - s, N)), mod(r - 1, N), block(mod(r - s - 1, N)));
  return all;
}

std::vector<double> allgather(Communicator& comm, std::span<const double> mine) {
  const std::vector<std::byte> raw = allgather(comm, std::as_bytes(mine));
  std::vector<double> out(raw.size() / sizeof(double));
  if (!raw.empty()) std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

std::vector<std::string> allgather_strings(Communicator& comm, const std::string& mine) {
  const double length = static_cast<double>(mine.size());   // exact below 2^53
  const std::vector<double> lengths = allgather(comm, std::span<const double>(&length, 1));
  const auto longest = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<std::byte> padded(longest);
  if (!mine.empty()) std::memcpy(padded.data(), mine.data(), mine.size());
  const std::vector<std::byte> all = allgather(comm, padded);
  std::vector<std::string> out;
  for (size_t r = 0; r < lengths.size(); ++r)
    out.emplace_back(reinterpret_cast<const char*>(all.data() + r * longest), static_cast<size_t>(lengths[r]));
  return out;
}

}  // namespace attn::dist

// The collectives on top of Communicator::exchange (communicator.hpp): a ring all-reduce whose
// float sums are in a fixed order, and a ring all-gather.
#include "attn/dist/communicator.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "attn/core/error.hpp"

namespace attn::dist {
namespace {

std::span<const std::byte> bytes_of(std::span<const float> v) { return std::as_bytes(v); }
std::span<std::byte> bytes_of(std::span<float> v) { return std::as_writable_bytes(v); }

// Chunk c of N over n elements: [n c / N, n (c + 1) / N).
std::span<float> chunk(std::span<float> data, int c, int N) {
  const auto n = static_cast<int64_t>(data.size());
  const int64_t begin = n * c / N, end = n * (c + 1) / N;
  return data.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
}

int mod(int a, int N) { return ((a % N) + N) % N; }

}  // namespace

void SingleProcess::exchange(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) {
  if (to != 0 || from != 0 || send.size() != recv.size())
    throw Error("dist: a single process can only exchange with itself, equal sizes");
  if (!send.empty()) std::memmove(recv.data(), send.data(), send.size());
}

void allreduce_sum(Communicator& comm, std::span<float> data) {
  const int N = comm.size(), r = comm.rank();
  if (N == 1) return;
  const int right = mod(r + 1, N), left = mod(r - 1, N);
  std::vector<float> incoming(data.size() / static_cast<size_t>(N) + 1);
  // Reduce-scatter: at step s rank r passes on chunk r - s (its own at s = 0, after that the
  // partial sum it received one step before) and adds its own values to chunk r - s - 1, which
  // arrives from the left holding a_{c} + ... + a_{r-1}. After N - 1 steps rank r holds the
  // whole sum of chunk r + 1, in the order a_{r+1} + a_{r+2} + ... + a_r.
  for (int s = 0; s < N - 1; ++s) {
    const std::span<float> out = chunk(data, mod(r - s, N), N), in = chunk(data, mod(r - s - 1, N), N);
    comm.exchange(right, bytes_of(std::span<const float>(out)), left,
                  bytes_of(std::span<float>(incoming.data(), in.size())));
    for (size_t i = 0; i < in.size(); ++i) in[i] = incoming[i] + in[i];
  }
  // All-gather: the finished chunks travel once around the ring, copied, never re-added.
  for (int s = 0; s < N - 1; ++s) {
    const std::span<float> out = chunk(data, mod(r + 1 - s, N), N), in = chunk(data, mod(r - s, N), N);
    comm.exchange(right, bytes_of(std::span<const float>(out)), left, bytes_of(in));
  }
}

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

}  // namespace attn::dist

// One OpenMP parallel region whose threads run work in phases, with a spin barrier between the
// phases instead of a region per phase: for a step made of a product and the pass that needs
// all of it (a recurrent cell's step), run as many times in a row as a sequence has steps.
//
// Why: every OpenMP region and every `omp barrier` inside one is dear, since libgomp's waker
// always makes a futex syscall (2 per region, counted with strace), and a syscall is slow in a VM
// with page-table isolation; an atomic spin barrier costs a fraction of either. An LSTM step on
// 32 x 128 is so little arithmetic that up to five regions were a large share of it
// (bench/README.md, "OpenMP regions and barriers").
#pragma once
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

namespace attn {

// A barrier for the threads of one region: each wait() returns once all `threads` have called
// it. It spins, then yields the core after kSpins checks, so a thread whose partner has been
// descheduled (more threads than cores) does not burn the partner's time slice.
class SpinBarrier {
 public:
  void wait(int threads) {
    if (threads <= 1) return;
    const unsigned generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads) {
      arrived_.store(0, std::memory_order_relaxed);   // seen by all: they acquire the generation
      generation_.store(generation + 1, std::memory_order_release);
      return;
    }
    for (int i = 0; generation_.load(std::memory_order_acquire) == generation; ++i) {
      if (i < kSpins)
        __builtin_ia32_pause();
      else
        std::this_thread::yield();
    }
  }

 private:
  static constexpr int kSpins = 1 << 14;
  std::atomic<int> arrived_{0};
  std::atomic<unsigned> generation_{0};
};

// The calling thread's place in a run_team region.
struct Team {
  int thread = 0;   // 0 .. size - 1
  int size = 1;
  SpinBarrier* barrier = nullptr;

  // Every thread of the team waits here until all have arrived.
  void sync() const { barrier->wait(size); }

  // [begin, end) of this thread's contiguous share of n items split evenly.
  std::pair<int64_t, int64_t> share(int64_t n) const {
    const int64_t per = (n + size - 1) / size;
    return {std::min(n, thread * per), std::min(n, (thread + 1) * per)};
  }

  // Calls work(part) for the parts this thread takes of `parts` (part k on thread k mod size).
  template <class Work>
  void each_part(int parts, const Work& work) const {
    for (int part = thread; part < parts; part += size) work(part);
  }
};

// Runs body(team) on `threads` threads (body(Team{}) on the calling thread alone when
// threads <= 1). A body that splits work by parts (each_part), not by threads, gives the same
// bits at any thread count.
template <class Body>
void run_team(int threads, const Body& body) {
  SpinBarrier barrier;
  if (threads <= 1) {
    body(Team{0, 1, &barrier});
    return;
  }
#pragma omp parallel num_threads(threads)
  body(Team{omp_get_thread_num(), omp_get_num_threads(), &barrier});
}

}  // namespace attn

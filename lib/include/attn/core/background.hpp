// Work that advances in the gaps of a computation. Data-parallel training
// (train/data_parallel.hpp) sends gradients while the backward computes the layers below, and
// its messages move only while someone polls them: the BLAS seam polls between products (outside
// parallel regions), which in a backward is every few milliseconds. Per thread; with nothing
// installed a poll is one branch.
#pragma once

namespace attn {

class BackgroundWork {
 public:
  virtual ~BackgroundWork() = default;
  // Advances the work without waiting; must not start parallel work of its own.
  virtual void poll() = 0;
};

// Polls this thread's background work, if any.
void poll_background();

// Installs `work` for this thread's polls until the end of the scope.
class ScopedBackgroundWork {
 public:
  explicit ScopedBackgroundWork(BackgroundWork& work);
  ~ScopedBackgroundWork();
  ScopedBackgroundWork(const ScopedBackgroundWork&) = delete;
  ScopedBackgroundWork& operator=(const ScopedBackgroundWork&) = delete;

 private:
  BackgroundWork* previous_;
};

}  // namespace attn

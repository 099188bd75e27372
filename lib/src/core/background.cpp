// Background work polled in the gaps of a computation (background.hpp).
#include "attn/core/background.hpp"

namespace attn {
namespace {
thread_local BackgroundWork* t_work = nullptr;
}

void poll_background() {
  if (t_work) t_work->poll();
}

ScopedBackgroundWork::ScopedBackgroundWork(BackgroundWork& work) : previous_(t_work) { t_work = &work; }
ScopedBackgroundWork::~ScopedBackgroundWork() { t_work = previous_; }

}  // namespace attn

// Announcements of a backward's progress (grad_ready.hpp).
#include "attn/nn/grad_ready.hpp"

namespace attn::nn {
namespace {
thread_local GradListener* t_listener = nullptr;
}

void announce_loss_count(double count) {
  if (t_listener) t_listener->loss_count(count);
}

void announce_final(std::span<Param* const> params) {
  if (t_listener) t_listener->final(params);
}

void announce_rows(const Param& table, const Tensor& ids) {
  if (t_listener) t_listener->rows(table, ids);
}

ScopedGradListener::ScopedGradListener(GradListener& listener) : previous_(t_listener) { t_listener = &listener; }
ScopedGradListener::~ScopedGradListener() { t_listener = previous_; }

}  // namespace attn::nn

// Announcements a model's backward makes while it runs, for whoever listens. Data-parallel
// training (train/data_parallel.hpp) listens: it starts summing a gradient over the ranks as soon
// as no later part of the backward adds to it, so that the exchange overlaps the rest of the
// backward (PyTorch DDP's buckets), instead of following it.
//
// A model's training step calls
//   announce_loss_count(count)   once its loss is known, before the backward: what its mean loss
//                                is over (the task's BatchStats::count);
//   announce_final(params)       when nothing later in this backward adds to these gradients (a
//                                layer's, once the backward has passed below it).
// and nn::Embedding calls
//   announce_rows(table, ids)    in a training forward (one with a cache) and again in its
//                                backward: rows `ids` (int32, any shape) of a Param::sparse_rows
//                                table, the rows its backward adds to.
// A listener that hears of a sparse table's rows in a step takes them to be the only rows with a
// gradient, and may sum which rows the ranks use while the backward runs (the backward's
// announcement checks them); without them it scans the table. So a table that something besides
// its lookups adds to (an output layer tied to it) must not be sparse_rows.
// Both cost a branch when nobody listens (a listener is per thread: ScopedGradListener).
// Announcing is an optimisation, never a condition: a listener treats every gradient as final when
// the step returns, so a model that announces nothing trains the same, only without the overlap.
// Announcing a gradient too early is a bug whose symptom is a wrong sum; the data-parallel tests
// compare every family's parameters with the overlap on and off, bit for bit.
#pragma once
#include <span>

#include "attn/nn/param.hpp"

namespace attn::nn {

class GradListener {
 public:
  virtual ~GradListener() = default;
  virtual void loss_count(double count) = 0;
  virtual void final(std::span<Param* const> params) = 0;
  virtual void rows(const Param& table, const Tensor& ids) = 0;
};

void announce_loss_count(double count);
void announce_final(std::span<Param* const> params);
void announce_rows(const Param& table, const Tensor& ids);

// Installs `listener` for this thread's announcements until the end of the scope.
class ScopedGradListener {
 public:
  explicit ScopedGradListener(GradListener& listener);
  ~ScopedGradListener();
  ScopedGradListener(const ScopedGradListener&) = delete;
  ScopedGradListener& operator=(const ScopedGradListener&) = delete;

 private:
  GradListener* previous_;
};

}  // namespace attn::nn

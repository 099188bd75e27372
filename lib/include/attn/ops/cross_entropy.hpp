// Softmax cross-entropy, fused: the loss of every language model, translation and tagging
// model in attnlab, computed from the logits without materialising probabilities.
//
// Forward makes two passes over each row of logits (max and sum of x, then the sum of
// exponentials) and keeps only the log-normaliser of each row, as its max and log-sum;
// backward makes one pass writing dlogits, recomputing exp(x - lse). A training step can
// run both as one op (cross_entropy_forward_backward_inplace), which exponentiates once. No
// [B*T, V] probability tensor is ever stored, and cross_entropy_backward_inplace writes dlogits
// over the logits, so the largest activation of a language model needs no second buffer. (Rows
// are written B*T, the tokens of a batch; any number of rows works.)
//
// Label smoothing follows PyTorch's CrossEntropyLoss (Szegedy et al. 2016, "Rethinking the
// Inception Architecture", sec. 7): the target distribution is (1 - eps) one_hot(t) + eps / V,
// so loss_i = (1 - eps)(-log p_{i,t_i}) + eps * mean_v(-log p_{i,v}).
#pragma once
#include <cstdint>

#include "attn/core/tensor.hpp"

namespace attn::ops {

struct CrossEntropyOptions {
  int32_t ignore_index = -1;      // rows whose target is this are left out of loss and mean
                                  // (token ids are >= 0, so -1 ignores nothing; PAD is 0)
  float label_smoothing = 0.0f;   // eps in [0, 1)
};

struct CrossEntropyResult {
  float loss = 0.0f;      // mean of the counted rows' losses; 0 when no row counts
  double sum = 0.0;       // sum of the counted rows' losses (in double, order-independent)
  int64_t count = 0;      // counted rows (targets != ignore_index)
  int64_t correct = 0;    // counted rows whose target attains the row maximum (ties count)
  double nll_sum = 0.0;   // sum of the counted rows' plain -log p_{i,t_i} (= sum without
                          // label smoothing; for perplexity)
  Tensor losses;          // [B*T] each row's loss, 0 for ignored rows (per-sequence metrics)
};

struct CrossEntropyCache {
  Tensor logits;          // [B*T, V] shared with the caller, not copied: leave it unchanged
  Tensor targets;         // [B*T] int32
  Tensor row_max;         // [B*T] m_i = max_v logits[i, v]
  Tensor log_sum;         // [B*T] log sum_v exp(logits[i, v] - m_i), so lse_i = m_i + log_sum_i
  int64_t count = 0;
  CrossEntropyOptions options;
};

// loss = (1 / count) sum_{i: t_i != ignore} [lse_i - (1 - eps) x_{i,t_i} - eps mean_v x_{i,v}],
// lse_i = log sum_v exp(x_{i,v}).   logits: [B*T, V] float32   targets: [B*T] int32.
// Throws DataError naming the row and value for a target outside [0, V) other than
// ignore_index, ConfigError for eps outside [0, 1). Rows are spread over threads; the sums
// are taken in row order, so the result does not depend on the thread count.
CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                         const CrossEntropyOptions& options,
                                         CrossEntropyCache* cache);

// dlogits_{i,v} = dloss / count * (softmax(x_i)_v - (1 - eps) [v = t_i] - eps / V) for
// counted rows, 0 for ignored rows (and everywhere when count = 0). dloss is the gradient
// of the mean loss (1 for a plain loss). Returns dlogits: [B*T, V], a new tensor.
Tensor cross_entropy_backward(float dloss, const CrossEntropyCache& cache);
// The same, written over cache.logits (which the caller's logits tensor shares) and returned:
// no allocation, for when the logits are not needed after the backward pass.
Tensor cross_entropy_backward_inplace(float dloss, CrossEntropyCache& cache);

// Forward and backward in one call, for a training step that needs the logits no further:
// returns what cross_entropy_forward returns and overwrites `logits` with dlogits (as
// cross_entropy_backward_inplace with dloss would). Each row's exponentials are computed once
// and kept in the row between the two passes, instead of once in each direction; dlogits
// agree with the two-call form to rounding (exp(x - m) / s instead of exp(x - m - log s)).
CrossEntropyResult cross_entropy_forward_backward_inplace(Tensor& logits, const Tensor& targets,
                                                          const CrossEntropyOptions& options, float dloss);

}  // namespace attn::ops

// The padded token batch every sequence model trains on, and the loss sums a training or
// evaluation step returns. Shared by the Transformer and the RNN encoder-decoder
// (docs/ARCHITECTURE.md, "Sequence models and training"); token ids 0..3 are PAD, BOS, EOS,
// UNK (datasets/README.md).
#pragma once
#include <cstdint>

#include "attn/core/tensor.hpp"
#include "attn/data/vocab.hpp"
#include "attn/ops/cross_entropy.hpp"

namespace attn::data {

// The first id that is not reserved (attn/data/vocab.hpp).
inline constexpr int32_t kFirstRegularToken = kNumReserved;

// A padded batch; ids 0..3 = PAD, BOS, EOS, UNK.
struct TokenBatch {
  Tensor src, src_len;          // int32 [B, S], [B]   (encdec; mlm: the input tokens)
  Tensor tgt, tgt_len;          // int32 [B, T], [B]: target tokens ending with EOS (the data
                                // set layout: datasets/README.md); the model prepends BOS
                                // for the decoder input (teacher forcing). mlm: the targets
                                // [B, S], PAD (ignored) where nothing is predicted.
  Tensor segments;              // int32 [B, S], mlm only (0/1), may be empty (all segment 0)
};

struct LossStats {              // summed over the batch's counted tokens
  double loss_sum = 0;          // label-smoothed loss
  double nll_sum = 0;           // plain negative log-likelihood (for perplexity)
  int64_t tokens = 0;
  int64_t correct = 0;          // argmax == target
};

// The sums of a cross-entropy over a batch's targets.
inline LossStats loss_stats(const ops::CrossEntropyResult& ce) {
  return {.loss_sum = ce.sum, .nll_sum = ce.nll_sum, .tokens = ce.count, .correct = ce.correct};
}

}  // namespace attn::data

// Accuracy and likelihood metrics for sequence outputs: token accuracy, sequence (exact-match)
// accuracy, perplexity and bits from a mean negative log-likelihood.
//
// Predictions and targets are int32 token ids [N, T] with the targets' lengths [N]; only the
// positions t < len[i] count (padding never does), so the metrics need no mask tensor.
#pragma once
#include <cstdint>

#include "attn/core/tensor.hpp"

namespace attn::metrics {

struct AccuracyCounts {
  int64_t correct_tokens = 0, tokens = 0;          // over positions t < len[i]
  int64_t correct_sequences = 0, sequences = 0;    // every position t < len[i] correct
  double token_accuracy() const { return tokens ? double(correct_tokens) / double(tokens) : 0.0; }
  double sequence_accuracy() const { return sequences ? double(correct_sequences) / double(sequences) : 0.0; }
  AccuracyCounts& operator+=(const AccuracyCounts& other);
};

// pred: int32 [N, T]   target: int32 [N, T]   len: int32 [N], each in [0, T].
// A sequence of length 0 counts as correct. Throws ShapeError / DataError on bad inputs.
AccuracyCounts count_correct(const Tensor& pred, const Tensor& target, const Tensor& len);

// exp(mean_nll), the mean NLL in nats per token (the cross-entropy loss).
double perplexity(double mean_nll);
// NLL in nats converted to bits: nll / ln 2 (e.g. bits per token or per sequence).
double nats_to_bits(double nll);

}  // namespace attn::metrics

// Token and sequence accuracy, perplexity (see accuracy.hpp).
#include "attn/metrics/accuracy.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "attn/core/error.hpp"

namespace attn::metrics {

AccuracyCounts& AccuracyCounts::operator+=(const AccuracyCounts& o) {
  correct_tokens += o.correct_tokens;
  tokens += o.tokens;
  correct_sequences += o.correct_sequences;
  sequences += o.sequences;
  return *this;
}

AccuracyCounts count_correct(const Tensor& pred, const Tensor& target, const Tensor& len) {
  check_tensor(target, {kAny, kAny}, "count_correct: target [N, L]", DType::i32);
  const int64_t n = target.dim(0), l = target.dim(1);
  check_tensor(pred, {n, l}, "count_correct: pred [N, L]", DType::i32);
  check_tensor(len, {n}, "count_correct: len [N]", DType::i32);
  AccuracyCounts c;
  c.sequences = n;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t li = len.idata()[i];
    if (li < 0 || li > l)
      throw DataError("count_correct: len[" + std::to_string(i) + "] = " + std::to_string(li) +
                      " is outside [0, " + std::to_string(l) + "]");
    const int32_t* p = pred.idata() + i * l;
    const int32_t* t = target.idata() + i * l;
    int64_t right = 0;
    for (int32_t k = 0; k < li; ++k) right += p[k] == t[k];
    c.correct_tokens += right;
    c.tokens += li;
    c.correct_sequences += right == li;
  }
  return c;
}

double perplexity(double mean_nll) { return std::exp(mean_nll); }

double nats_to_bits(double nll) { return nll / std::numbers::ln2; }

}  // namespace attn::metrics

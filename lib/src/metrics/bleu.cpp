// Corpus BLEU-4 (see bleu.hpp).
#include "attn/metrics/bleu.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <span>

#include "attn/core/error.hpp"

namespace attn::metrics {
namespace {

// Clipped matches and totals for n = 1..4. The n-grams of a sentence are counted in an ordered
// map keyed by spans of the sentence itself (no copies); sentences are short, so the
// logarithmic map is cheaper than hashing vectors of strings.
template <class Tok>
BleuStats stats_of(const std::vector<Tok>& hyp, const std::vector<Tok>& ref) {
  using Gram = std::span<const Tok>;
  const auto less = [](Gram a, Gram b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  };
  BleuStats s;
  s.hyp_len = static_cast<int64_t>(hyp.size());
  s.ref_len = static_cast<int64_t>(ref.size());
  for (int n = 1; n <= kBleuOrder; ++n) {
    std::map<Gram, int64_t, decltype(less)> ref_counts(less);
    for (size_t i = 0; i + n <= ref.size(); ++i) ++ref_counts[Gram(ref.data() + i, n)];
    std::map<Gram, int64_t, decltype(less)> hyp_counts(less);
    for (size_t i = 0; i + n <= hyp.size(); ++i) ++hyp_counts[Gram(hyp.data() + i, n)];
    int64_t matches = 0, total = 0;
    for (const auto& [gram, count] : hyp_counts) {
      total += count;
      const auto it = ref_counts.find(gram);
      if (it != ref_counts.end()) matches += std::min(count, it->second);   // clipping
    }
    s.matches[n - 1] = matches;
    s.totals[n - 1] = total;
  }
  return s;
}

}  // namespace

BleuStats& BleuStats::operator+=(const BleuStats& other) {
  for (int n = 0; n < kBleuOrder; ++n) {
    matches[n] += other.matches[n];
    totals[n] += other.totals[n];
  }
  hyp_len += other.hyp_len;
  ref_len += other.ref_len;
  return *this;
}

BleuStats bleu_stats(const std::vector<std::string>& hyp, const std::vector<std::string>& ref) {
  return stats_of(hyp, ref);
}
BleuStats bleu_stats(const std::vector<int32_t>& hyp, const std::vector<int32_t>& ref) {
  return stats_of(hyp, ref);
}

BleuScore bleu_score(const BleuStats& s) {
  BleuScore out;
  out.hyp_len = s.hyp_len;
  out.ref_len = s.ref_len;
  double log_sum = 0;
  bool any_zero = false;
  for (int n = 0; n < kBleuOrder; ++n) {
    const double p = s.totals[n] > 0 ? static_cast<double>(s.matches[n]) / static_cast<double>(s.totals[n]) : 0.0;
    out.precisions[n] = 100.0 * p;
    if (p > 0) log_sum += std::log(p) / kBleuOrder;
    else any_zero = true;
  }
  const double c = static_cast<double>(s.hyp_len), r = static_cast<double>(s.ref_len);
  out.ratio = r > 0 ? c / r : 0.0;
  out.brevity_penalty = c == 0 ? 0.0 : c > r ? 1.0 : std::exp(1.0 - r / c);
  out.bleu = any_zero ? 0.0 : 100.0 * out.brevity_penalty * std::exp(log_sum);
  return out;
}

double bleu_n(const BleuScore& score, int n) {
  if (n < 1 || n > kBleuOrder) throw ConfigError("bleu_n: n must be in [1, 4], got " + std::to_string(n));
  double log_sum = 0;
  for (int k = 0; k < n; ++k) {
    if (score.precisions[k] <= 0) return 0.0;
    log_sum += std::log(score.precisions[k] / 100.0) / n;
  }
  return 100.0 * score.brevity_penalty * std::exp(log_sum);
}

BleuScore corpus_bleu(const std::vector<std::vector<std::string>>& hyps,
                      const std::vector<std::vector<std::string>>& refs) {
  if (hyps.size() != refs.size())
    throw DataError("corpus_bleu: " + std::to_string(hyps.size()) + " hypotheses but " +
                    std::to_string(refs.size()) + " references; they must pair up line by line");
  BleuStats total;
  for (size_t i = 0; i < hyps.size(); ++i) total += bleu_stats(hyps[i], refs[i]);
  return bleu_score(total);
}

std::string format_bleu(const BleuScore& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "BLEU = %.2f, %.1f/%.1f/%.1f/%.1f (BP=%.3f, ratio=%.3f, hyp_len=%lld, ref_len=%lld)",
                s.bleu, s.precisions[0], s.precisions[1], s.precisions[2], s.precisions[3],
                s.brevity_penalty, s.ratio, static_cast<long long>(s.hyp_len),
                static_cast<long long>(s.ref_len));
  return buf;
}

}  // namespace attn::metrics

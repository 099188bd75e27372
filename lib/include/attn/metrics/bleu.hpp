// Corpus BLEU-4 (Papineni, Roukos, Ward & Zhu 2002, "BLEU: a Method for Automatic Evaluation of
// Machine Translation", ACL), one reference per hypothesis, on token lists.
//
//   p_n  = sum over sentences of the clipped n-gram matches / sum of hypothesis n-grams,
//          where a hypothesis n-gram counts at most as often as it occurs in the reference
//          (section 2.1.1, "modified n-gram precision"), for n = 1..4;
//   BP   = 1 if c > r, else exp(1 - r / c), with c and r the total hypothesis and reference
//          lengths (section 2.2.2; BP = 0 when c = 0);
//   BLEU = BP · exp(sum_n (1/4) log p_n), reported × 100; 0 when any p_n is 0 (no smoothing,
//          as multi-bleu.perl, sacrebleu's "none" and NLTK's corpus_bleu without smoothing).
// Sentence statistics are summed before dividing: corpus BLEU is not the mean of sentence
// BLEUs. Tokens are compared as exact strings (or ids): tokenise and case hypotheses and
// references the same way first.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace attn::metrics {

inline constexpr int kBleuOrder = 4;

// The sufficient statistics of corpus BLEU; add sentences with +=.
struct BleuStats {
  std::array<int64_t, kBleuOrder> matches{};   // clipped n-gram matches, n = 1..4
  std::array<int64_t, kBleuOrder> totals{};    // hypothesis n-grams, n = 1..4
  int64_t hyp_len = 0;                         // c
  int64_t ref_len = 0;                         // r
  BleuStats& operator+=(const BleuStats& other);
};

// The statistics of one hypothesis against its reference.
BleuStats bleu_stats(const std::vector<std::string>& hyp, const std::vector<std::string>& ref);
BleuStats bleu_stats(const std::vector<int32_t>& hyp, const std::vector<int32_t>& ref);

struct BleuScore {
  double bleu = 0;                                  // 0..100
  std::array<double, kBleuOrder> precisions{};      // p_1..p_4, 0..100
  double brevity_penalty = 0;                       // BP
  double ratio = 0;                                 // c / r (0 when r = 0)
  int64_t hyp_len = 0, ref_len = 0;
};

BleuScore bleu_score(const BleuStats& stats);

// BLEU-n for n = 1..4 as the captioning literature reports it (coco-caption, Xu et al. 2015's
// Table 1): BP (p_1 ... p_n)^(1/n) x 100, 0 when any of them is 0; bleu_n(s, 4) is s.bleu.
double bleu_n(const BleuScore& score, int n);

// Corpus BLEU of hyps[i] against refs[i]; throws DataError when the counts differ.
BleuScore corpus_bleu(const std::vector<std::vector<std::string>>& hyps,
                      const std::vector<std::vector<std::string>>& refs);

// One line in the form of multi-bleu.perl:
// "BLEU = 35.12, 66.7/40.0/25.0/14.3 (BP=1.000, ratio=1.000, hyp_len=6, ref_len=6)".
std::string format_bleu(const BleuScore& score);

}  // namespace attn::metrics

// Corpus BLEU of parts of a corpus and by source-length bucket (see bleu_buckets.hpp).
#include "attn/metrics/bleu_buckets.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/core/error.hpp"

namespace attn::metrics {

std::vector<PartBleu> partitioned_bleu(const std::vector<std::vector<std::string>>& hyps,
                                       const std::vector<std::vector<std::string>>& refs,
                                       std::span<const int64_t> part, int64_t parts) {
  if (hyps.size() != refs.size() || part.size() != hyps.size())
    throw DataError("partitioned_bleu: " + std::to_string(hyps.size()) + " hypotheses, " +
                    std::to_string(refs.size()) + " references and " + std::to_string(part.size()) +
                    " keys; they must pair up sentence by sentence");
  std::vector<std::vector<std::vector<std::string>>> part_hyps(static_cast<size_t>(parts)),
      part_refs(static_cast<size_t>(parts));
  for (size_t i = 0; i < part.size(); ++i) {
    if (part[i] < 0 || part[i] >= parts)
      throw DataError("partitioned_bleu: sentence " + std::to_string(i) + " has key " + std::to_string(part[i]) +
                      ", expected 0.." + std::to_string(parts - 1));
    part_hyps[static_cast<size_t>(part[i])].push_back(hyps[i]);
    part_refs[static_cast<size_t>(part[i])].push_back(refs[i]);
  }
  std::vector<PartBleu> out(static_cast<size_t>(parts));
  for (size_t k = 0; k < out.size(); ++k) {
    out[k].sentences = static_cast<int64_t>(part_hyps[k].size());
    out[k].score = corpus_bleu(part_hyps[k], part_refs[k]);
  }
  return out;
}

std::vector<int64_t> uniform_length_buckets(int64_t width, int64_t max_len) {
  if (width < 1) throw ConfigError("length buckets: the width must be >= 1, got " + std::to_string(width));
  std::vector<int64_t> upper{width};
  while (upper.back() < max_len) upper.push_back(upper.back() + width);
  return upper;
}

std::vector<LengthBucket> bleu_by_length(const std::vector<std::vector<std::string>>& hyps,
                                         const std::vector<std::vector<std::string>>& refs,
                                         std::span<const int32_t> lengths, std::span<const int64_t> upper_bounds) {
  if (upper_bounds.empty()) throw ConfigError("length buckets: no upper bound given");
  for (size_t k = 0; k < upper_bounds.size(); ++k)
    if (upper_bounds[k] < 1 || (k > 0 && upper_bounds[k] <= upper_bounds[k - 1]))
      throw ConfigError("length buckets: upper bounds must be positive and increasing, got " +
                        std::to_string(upper_bounds[k]) + (k > 0 ? " after " + std::to_string(upper_bounds[k - 1]) : ""));
  std::vector<int64_t> upper(upper_bounds.begin(), upper_bounds.end());
  const int64_t longest = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  if (longest > upper.back()) upper.push_back(longest);   // the open bucket

  std::vector<int64_t> key(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i)   // the first bucket whose bound reaches L
    key[i] = std::lower_bound(upper.begin(), upper.end(), int64_t{lengths[i]}) - upper.begin();
  const std::vector<PartBleu> parts = partitioned_bleu(hyps, refs, key, static_cast<int64_t>(upper.size()));

  std::vector<LengthBucket> out(upper.size());
  for (size_t k = 0; k < upper.size(); ++k) {
    out[k].lower = k == 0 ? 1 : upper[k - 1] + 1;
    out[k].upper = upper[k];
    out[k].sentences = parts[k].sentences;
    out[k].score = parts[k].score;
  }
  return out;
}

std::string format_length_table(const std::vector<LengthBucket>& buckets) {
  std::string out = "source length  sentences    BLEU     BP  hyp_len  ref_len\n";
  char line[160];
  for (const LengthBucket& b : buckets) {
    const std::string range = std::to_string(b.lower) + "-" + std::to_string(b.upper);
    if (b.sentences > 0)
      std::snprintf(line, sizeof line, "%13s  %9lld  %6.2f  %5.3f  %7lld  %7lld\n", range.c_str(),
                    static_cast<long long>(b.sentences), b.score.bleu, b.score.brevity_penalty,
                    static_cast<long long>(b.score.hyp_len), static_cast<long long>(b.score.ref_len));
    else
      std::snprintf(line, sizeof line, "%13s  %9d  %6s  %5s  %7d  %7d\n", range.c_str(), 0, "-", "-", 0, 0);
    out += line;
  }
  return out;
}

void write_bleu_scores(io::File& file, const BleuScore& total, int64_t sentences,
                       const std::vector<LengthBucket>& buckets) {
  file.set_attr("/metrics", "bleu", total.bleu);
  file.set_attr("/metrics", "brevity_penalty", total.brevity_penalty);
  file.set_attr("/metrics", "ratio", total.ratio);
  file.set_attr("/metrics", "hyp_len", total.hyp_len);
  file.set_attr("/metrics", "ref_len", total.ref_len);
  file.set_attr("/metrics", "sentences", sentences);
  if (buckets.empty()) return;
  const int64_t k = static_cast<int64_t>(buckets.size());
  Tensor lower({k}, DType::i32), upper({k}, DType::i32), count({k}, DType::i32);
  Tensor bleu({k}), bp({k});
  for (int64_t i = 0; i < k; ++i) {
    const LengthBucket& b = buckets[static_cast<size_t>(i)];
    lower.idata()[i] = static_cast<int32_t>(b.lower);
    upper.idata()[i] = static_cast<int32_t>(b.upper);
    count.idata()[i] = static_cast<int32_t>(b.sentences);
    bleu.data()[i] = b.sentences > 0 ? static_cast<float>(b.score.bleu) : NAN;
    bp.data()[i] = b.sentences > 0 ? static_cast<float>(b.score.brevity_penalty) : NAN;
  }
  file.write("/by_length/lower", lower);
  file.write("/by_length/upper", upper);
  file.write("/by_length/sentences", count);
  file.write("/by_length/bleu", bleu);
  file.write("/by_length/brevity_penalty", bp);
}

}  // namespace attn::metrics

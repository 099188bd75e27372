// Corpus BLEU of parts of a corpus: every sentence gets a key (a part number), and each part is
// scored as a corpus of its own with corpus_bleu (bleu.hpp). The use is BLEU by source length
// (Bahdanau, Cho & Bengio 2015, "Neural Machine Translation by Jointly Learning to Align and
// Translate", ICLR, Figure 2): does a model's quality hold as the sentences grow?
//
// Length buckets are given by their inclusive upper bounds u_0 < u_1 < ... < u_{n-1}: bucket k
// holds the sentences of source length len with u_{k-1} < len <= u_k (u_{-1} = 0). Sentences
// longer than u_{n-1} form one more, open bucket whose upper bound is the longest length found.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/io/hdf5_file.hpp"
#include "attn/metrics/bleu.hpp"

namespace attn::metrics {

// One part's score: corpus_bleu of its sentences (0 for an empty part, as for an empty corpus).
struct PartBleu {
  int64_t sentences = 0;
  BleuScore score;
};

// part[i] in [0, parts) names the part of sentence i; returns the score of every part, in
// order, empty parts included. Throws DataError when hyps, refs and part differ in size or a
// key is outside [0, parts).
std::vector<PartBleu> partitioned_bleu(const std::vector<std::vector<std::string>>& hyps,
                                       const std::vector<std::vector<std::string>>& refs,
                                       std::span<const int64_t> part, int64_t parts);

// Upper bounds width, 2 width, ... up to the first one >= max_len (at least one bucket).
// Throws ConfigError when width < 1.
std::vector<int64_t> uniform_length_buckets(int64_t width, int64_t max_len);

struct LengthBucket {
  int64_t lower = 0, upper = 0;   // the bucket holds lengths lower..upper (inclusive)
  int64_t sentences = 0;
  BleuScore score;
};

// BLEU per source-length bucket (see above); lengths[i] is the source length of sentence i.
// Throws ConfigError when the bounds are empty, not positive or not strictly increasing, and
// DataError when the sizes differ (as partitioned_bleu).
std::vector<LengthBucket> bleu_by_length(const std::vector<std::vector<std::string>>& hyps,
                                         const std::vector<std::vector<std::string>>& refs,
                                         std::span<const int32_t> lengths, std::span<const int64_t> upper_bounds);

// A table of the buckets, one line each after a header:
//   "source length  sentences    BLEU     BP  hyp_len  ref_len"
//   "          1-5         12   41.20  1.000       60       58"
// An empty bucket shows "-" for its BLEU and BP.
std::string format_length_table(const std::vector<LengthBucket>& buckets);

// Writes scores into an output file being made (format "attnlab/output", kind "bleu"):
//   /metrics attributes  bleu, brevity_penalty, ratio (float64), hyp_len, ref_len, sentences
//                        (int64): the whole corpus
//   /by_length/lower, upper      int32 [buckets]    each bucket's source lengths, inclusive
//   /by_length/sentences         int32 [buckets]
//   /by_length/bleu              float32 [buckets]  0..100; NaN for an empty bucket (a chart
//                                                   breaks there)
//   /by_length/brevity_penalty   float32 [buckets]  likewise
// The /by_length group is left out when `buckets` is empty. Draw the chart with
//   attn-plot curve FILE --series /by_length/upper:/by_length/bleu --out bleu.png
void write_bleu_scores(io::File& file, const BleuScore& total, int64_t sentences,
                       const std::vector<LengthBucket>& buckets);

}  // namespace attn::metrics

// Sentence-pair classification from a parallel corpus (datasets/README.md, "Sentence pairs:
// pairs"): "is B the translation of A", BERT's sentence-pair task on real text. Every kept line
// pair (A_i, B_i) of a split gives two labelled examples (families/transformer/labelled_data.hpp): A_i | B_i of
// class 1 ("translation"), and A_i | B_j of class 0 ("other"), B_j the target of another line j
// of the same split drawn uniformly (Rng(seed).fork(split), so the same seed gives the same
// negatives), whose text differs from B_i's.
#pragma once
#include <cstdint>

#include "attn/data/vocab.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "attn/datasets/splits.hpp"
#include "attn/families/transformer/labelled_data.hpp"

namespace attn::datasets {

inline constexpr const char* kPairLabels[2] = {"other", "translation"};

// One vocabulary for both sides (the model has one embedding table): the tokens of the training
// split's two sides counted together, built with `options`.
data::Vocab joint_vocab(const Splits<TextPairs>& text, const data::TokenizeOptions& tokenize,
                        const data::VocabOptions& options);

struct PairsData {
  Splits<transformer::LabelledSplit> splits;
  data::Vocab vocab;
  data::TokenizeOptions tokenize;
  Splits<int64_t> lines, dropped;   // line pairs read and left out (an empty side, too long)
};

// The labelled pairs of `parallel` (build_parallel's output with one vocabulary for both sides,
// ParallelConfig::vocab). A split with fewer than two distinct targets has no negatives to draw:
// DataError naming it (an empty split stays empty).
PairsData sentence_pairs(const ParallelData& parallel, uint64_t seed);

// /train, /valid, /test (labelled layout), /labels, /vocab/src with /vocab attributes tokenizer and
// lowercase, /<split> attributes lines and dropped. The caller has created the file.
void write_sentence_pairs(io::File& file, const PairsData& data);

}  // namespace attn::datasets

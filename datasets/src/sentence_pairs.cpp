// Sentence-pair classification from parallel text (sentence_pairs.hpp).
#include "attn/datasets/sentence_pairs.hpp"

#include <algorithm>

#include "attn/core/error.hpp"
#include "attn/core/rng.hpp"
#include "attn/data/batching.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {
namespace {

// Row i of a padded [N, L] tensor, its first `len` ids.
std::vector<int32_t> row(const Tensor& t, int64_t i, int64_t len) {
  const int32_t* p = t.idata() + i * t.dim(1);
  return {p, p + len};
}

}  // namespace

data::Vocab joint_vocab(const Splits<TextPairs>& text, const data::TokenizeOptions& tokenize,
                        const data::VocabOptions& options) {
  data::TokenCounts counts;
  for (const std::vector<std::string>* side : {&text.train.src, &text.train.tgt})
    for (const std::string& line : *side) data::count_tokens(data::tokenize(line, tokenize), counts);
  return data::Vocab::build(counts, options);
}

PairsData sentence_pairs(const ParallelData& parallel, uint64_t seed) {
  PairsData out;
  out.vocab = parallel.src_vocab;
  out.tokenize = parallel.tokenize;
  const Rng root(seed);
  for (int k = 0; k < 3; ++k) {
    const TokenSplit& s = parallel.splits[k].tokens;
    out.lines[k] = parallel.splits[k].lines;
    out.dropped[k] = parallel.splits[k].dropped;
    const int64_t n = s.src.dim(0);
    const Tensor src_rows = s.src.all(), tgt_rows = s.tgt.all();
    std::vector<std::vector<int32_t>> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      a[static_cast<size_t>(i)] = row(src_rows, i, s.src_len.idata()[i]);
      b[static_cast<size_t>(i)] = row(tgt_rows, i, s.tgt_len.idata()[i] - 1);   // without EOS
    }
    if (n > 0 && std::all_of(b.begin(), b.end(), [&](const auto& x) { return x == b[0]; }))
      throw DataError(std::string("pairs: split ") + kSplitNames[k] + " has " + std::to_string(n) +
                      " line pairs but no two different targets: there is no other sentence to draw a negative from");
    Rng rng = root.fork(static_cast<uint64_t>(k));
    std::vector<std::vector<int32_t>> rows, segs;
    std::vector<int32_t> labels;
    auto add = [&](const std::vector<int32_t>& first, const std::vector<int32_t>& second, int32_t label) {
      std::vector<int32_t> r = first, g(first.size(), 0);
      r.insert(r.end(), second.begin(), second.end());
      g.resize(r.size(), 1);
      rows.push_back(std::move(r));
      segs.push_back(std::move(g));
      labels.push_back(label);
    };
    for (int64_t i = 0; i < n; ++i) {
      add(a[static_cast<size_t>(i)], b[static_cast<size_t>(i)], 1);
      int64_t j = i;
      while (b[static_cast<size_t>(j)] == b[static_cast<size_t>(i)]) j = rng.uniform_int(n);
      add(a[static_cast<size_t>(i)], b[static_cast<size_t>(j)], 0);
    }
    const data::PaddedBatch src = data::pad_sequences(rows), seg = data::pad_sequences(segs, src.tokens.dim(1));
    out.splits[k] = {.name = kSplitNames[k], .src = src.tokens, .src_len = src.lengths, .segments = seg.tokens,
                     .label = Tensor::from_ints({static_cast<int64_t>(labels.size())}, labels)};
  }
  return out;
}

void write_sentence_pairs(io::File& file, const PairsData& data) {
  for (int k = 0; k < 3; ++k) {
    transformer::write_labelled_split(file, kSplitNames[k], data.splits[k]);
    const std::string g = std::string("/") + kSplitNames[k];
    file.set_attr(g, "lines", data.lines[k]);
    file.set_attr(g, "dropped", data.dropped[k]);
  }
  transformer::write_labels(file, {kPairLabels[0], kPairLabels[1]});
  data::write_vocab(file, "/vocab/src", data.vocab);
  file.set_attr("/vocab", "tokenizer", kTokenizerName);
  file.set_attr("/vocab", "lowercase", static_cast<int64_t>(data.tokenize.lowercase));
}

}  // namespace attn::datasets

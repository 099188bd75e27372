// What the sequence-model families share on token data (lib/train/token_run): decoding a split
// batch by batch and putting the results back in split order, with every named attention
// tensor padded to the largest batch; the translation output file.
#include "attn/train/token_run.hpp"

#include <algorithm>
#include <vector>

#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

// 5 sentences of lengths 4, 1, 3, 2, 4 (ids from 4); targets = the source reversed, then EOS.
data::TokenSplit reverse_split() {
  data::TokenSplit s;
  s.name = "test";
  const std::vector<std::vector<int32_t>> src = {{4, 5, 6, 7}, {8}, {5, 9, 4}, {6, 6}, {7, 8, 9, 4}};
  std::vector<std::vector<int32_t>> tgt;
  for (auto t : src) {
    std::reverse(t.begin(), t.end());
    t.push_back(data::kEos);
    tgt.push_back(t);
  }
  const data::PaddedBatch a = data::pad_sequences(src), b = data::pad_sequences(tgt);
  s.src = a.tokens, s.src_len = a.lengths, s.tgt = b.tokens, s.tgt_len = b.lengths;
  return s;
}

// A stand-in decoder: emits the source reversed (sentence 3 gets one token wrong), and as
// "weights" [B, 2, Tb, Sb] the value 10 * (first source id) + head + 1 everywhere, so that each
// sentence's block can be recognised after reassembly.
decode::Decoded fake_decode(const data::PaddedBatch& src, std::vector<int64_t>& batch_sizes) {
  const int64_t B = src.tokens.dim(0), Sb = src.tokens.dim(1);
  batch_sizes.push_back(B);
  decode::Decoded out;
  int64_t Tb = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int32_t* row = src.tokens.idata() + b * Sb;
    std::vector<int32_t> t(row, row + src.lengths.idata()[b]);
    std::reverse(t.begin(), t.end());
    if (t.size() == 2) t[1] = 4;   // sentence 3 ({6, 6}) comes out as {6, 4}
    Tb = std::max<int64_t>(Tb, static_cast<int64_t>(t.size()));
    out.tokens.push_back(t);
    out.scores.push_back(-static_cast<float>(t.size()));
  }
  Tensor w({B, 2, Tb, Sb});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < Tb * Sb; ++i)
        w.at(((b * 2 + h) * Tb) * Sb + i) = static_cast<float>(10 * src.tokens.idata()[b * Sb] + h + 1);
  out.attention.emplace_back("cross/layer0", std::move(w));
  return out;
}

}  // namespace

TEST_CASE("translate_split puts every batch back in split order and pads attention to the largest batch",
          "[unit][token_run]") {
  const data::TokenSplit split = reverse_split();
  std::vector<int64_t> batch_sizes;
  // 6 source tokens per batch: several batches of different extents.
  const train::Translation tr =
      train::translate_split(split, 6, [&](const data::PaddedBatch& src) { return fake_decode(src, batch_sizes); });
  CHECK(batch_sizes.size() > 1);
  REQUIRE(tr.tokens.size() == 5);
  CHECK(tr.tokens[0] == std::vector<int32_t>{7, 6, 5, 4});
  CHECK(tr.tokens[1] == std::vector<int32_t>{8});
  CHECK(tr.tokens[3] == std::vector<int32_t>{6, 4});
  CHECK(tr.scores == std::vector<float>{-4, -1, -3, -2, -4});
  // Exact match of tokens + EOS against the targets: all but sentence 3.
  CHECK(tr.accuracy.sequences == 5);
  CHECK(tr.accuracy.correct_sequences == 4);

  REQUIRE(tr.attention.size() == 1);
  CHECK(tr.attention[0].first == "cross/layer0");
  const Tensor& a = tr.attention[0].second;
  REQUIRE(a.shape() == Shape{5, 2, 4, 4});   // [N, heads, longest output, longest source]
  for (int64_t n = 0; n < 5; ++n) {
    const int64_t len = split.src_len.idata()[n];
    // The rows and columns the sentence's batch had: at least its own lengths, at most 4.
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t t = 0; t < 4; ++t)
        for (int64_t s = 0; s < 4; ++s) {
          const float v = a.at(((n * 2 + h) * 4 + t) * 4 + s);
          if (t < len && s < len) CHECK(v == static_cast<float>(10 * split.src.all().idata()[n * 4] + h + 1));
          else CHECK((v == 0.0f || v == static_cast<float>(10 * split.src.all().idata()[n * 4] + h + 1)));
        }
  }
  // Sentences 1 and 3 (lengths 1 and 2) make the first batch, [2, 2, 2, 2]: the rest is padding.
  for (int64_t n : {1, 3})
    for (int64_t t = 0; t < 4; ++t)
      for (int64_t s = 0; s < 4; ++s)
        if (t >= 2 || s >= 2) CHECK(a.at(((n * 2 + 1) * 4 + t) * 4 + s) == 0.0f);

  data::TokenSplit no_src;
  no_src.name = "train";
  no_src.tgt = split.tgt, no_src.tgt_len = split.tgt_len;
  REQUIRE_THROWS_WITH(train::translate_split(no_src, 6, [&](const data::PaddedBatch& src) {
                        return fake_decode(src, batch_sizes);
                      }),
                      Contains("the split 'train' has no sources"));
}

TEST_CASE("write_translation stores the layout of a translation output file", "[io][token_run]") {
  test::TempDir dir;
  const data::TokenSplit split = reverse_split();
  std::vector<int64_t> batch_sizes;
  const train::Translation tr =
      train::translate_split(split, 64, [&](const data::PaddedBatch& src) { return fake_decode(src, batch_sizes); });
  data::TokenCounts counts;
  data::count_tokens({"a", "b", "c", "d", "e", "f"}, counts);
  const data::Vocab vocab = data::Vocab::build(counts);
  {
    io::File f = io::File::create(dir.file("p.h5"));
    train::write_translation(f, tr, split, vocab, vocab);
    f.commit();
  }
  const io::File f = io::File::open_read(dir.file("p.h5"));
  CHECK(f.shape("/predictions") == Shape{5, 4});
  CHECK(f.read("/predictions_len", DType::i32).idata()[3] == 2);
  CHECK(f.read_strings("/predictions_text").at(1) == vocab.token(8));
  CHECK(f.shape("/scores") == Shape{5});
  CHECK(f.shape("/src") == Shape{5, 4});
  CHECK(f.shape("/attention/cross/layer0") == Shape{5, 2, 4, 4});
  CHECK(f.read_strings("/vocab/tgt").size() == 10);
  CHECK(f.attr_int("/metrics", "sentences") == 5);
  CHECK(f.attr_double("/metrics", "sequence_accuracy") == Approx(0.8));
}

TEST_CASE("valid_bleu scores translations of the validation split against its targets without EOS",
          "[unit][token_run]") {
  const data::TokenSplit valid = reverse_split();
  auto targets_without_eos = [&](const data::TokenSplit& s) {
    train::Translation t;
    for (int64_t i = 0; i < s.size(); ++i) {
      const int32_t* row = s.tgt.all().idata() + i * s.tgt.dim(1);
      t.tokens.emplace_back(row, row + s.tgt_len.idata()[i] - 1);
    }
    return t;
  };
  const train::EpochMetric exact = train::valid_bleu(valid, targets_without_eos);
  CHECK(exact.name == "bleu");
  CHECK(exact.compute() == Approx(100.0));

  // Sentence 0 gets its last two tokens swapped: the corpus BLEU is what metrics::bleu_score
  // gives for the summed statistics, computed here independently of valid_bleu.
  auto one_wrong = [&](const data::TokenSplit& s) {
    train::Translation t = targets_without_eos(s);
    std::swap(t.tokens[0][2], t.tokens[0][3]);
    return t;
  };
  metrics::BleuStats stats;
  const train::Translation wrong = one_wrong(valid), right = targets_without_eos(valid);
  for (size_t i = 0; i < right.tokens.size(); ++i) stats += metrics::bleu_stats(wrong.tokens[i], right.tokens[i]);
  const double want = metrics::bleu_score(stats).bleu;
  CHECK(want < 100.0);
  CHECK(train::valid_bleu(valid, one_wrong).compute() == Approx(want));

  data::TokenSplit no_targets = valid;
  no_targets.tgt = Tensor();
  no_targets.tgt_len = Tensor();
  REQUIRE_THROWS_WITH(train::valid_bleu(no_targets, targets_without_eos), Contains("needs sources and targets"));
}

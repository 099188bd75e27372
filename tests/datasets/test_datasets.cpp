// The synthetic generators of datasets/: NTM tasks and toy translation. Each task's target is
// recomputed here from its input by the task's definition, on small sizes with fixed seeds.
#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "attn/datasets/ntm_tasks.hpp"
#include "attn/datasets/toy_translation.hpp"
#include "test_support.hpp"

using namespace attn;
using namespace attn::datasets;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const size_t bytes = static_cast<size_t>(a.numel()) * 4;
  return a.dtype() == DType::f32 ? std::memcmp(a.data(), b.data(), bytes) == 0
                                 : std::memcmp(a.idata(), b.idata(), bytes) == 0;
}

bool same_split(const SequenceSplit& a, const SequenceSplit& b) {
  return same_bits(a.inputs.all(), b.inputs.all()) && same_bits(a.input_len, b.input_len) &&
         same_bits(a.targets.all(), b.targets.all()) && same_bits(a.target_len, b.target_len);
}

// Element (i, t, c) of a [N, Tin, I] (or [N, Tout, O]) float tensor.
float at3(const Tensor& x, int64_t i, int64_t t, int64_t c) {
  return x.data()[(i * x.dim(1) + t) * x.dim(2) + c];
}

bool all_zero_from(const Tensor& x, int64_t i, int64_t t0) {   // rows t0.. of example i
  for (int64_t t = t0; t < x.dim(1); ++t)
    for (int64_t c = 0; c < x.dim(2); ++c)
      if (at3(x, i, t, c) != 0.0f) return false;
  return true;
}

bool is_bit(float v) { return v == 0.0f || v == 1.0f; }

// The inputs of a split as vectors of floats, one per example (up to its length).
std::set<std::vector<float>> input_set(const SequenceSplit& s) {
  std::set<std::vector<float>> out;
  const int64_t row = s.inputs.dim(1) * s.inputs.dim(2);
  for (int64_t i = 0; i < s.inputs.dim(0); ++i) {
    const float* p = s.inputs.all().data() + i * row;
    out.insert(std::vector<float>(p, p + s.input_len.idata()[i] * s.inputs.dim(2)));
  }
  return out;
}

std::vector<int32_t> row_ints(const Tensor& x, int64_t i, int64_t len) {
  const int32_t* p = x.idata() + i * x.dim(1);
  return {p, p + len};
}

}  // namespace

TEST_CASE("copy: shapes, lengths in range, delimiter, and the target is the input bits",
          "[unit][data-gen]") {
  CopyConfig cfg;
  cfg.width = 5;
  cfg.min_len = 2;
  cfg.max_len = 7;
  const auto splits = make_copy(cfg, {40, 10, 10}, /*seed=*/3);
  const SequenceSplit& s = splits.train;
  CHECK(s.inputs.shape() == Shape{40, 8, 6});
  CHECK(s.targets.shape() == Shape{40, 7, 5});
  CHECK(splits.valid.inputs.shape() == Shape{10, 8, 6});
  CHECK(splits.test.targets.shape() == Shape{10, 7, 5});
  REQUIRE(s.input_len.dtype() == DType::i32);
  std::set<int32_t> lengths;
  for (int64_t i = 0; i < 40; ++i) {
    const int32_t L = s.target_len.idata()[i];
    lengths.insert(L);
    REQUIRE(L >= 2);
    REQUIRE(L <= 7);
    REQUIRE(s.input_len.idata()[i] == L + 1);
    for (int64_t t = 0; t < L; ++t) {
      CHECK(at3(s.inputs.all(), i, t, 5) == 0.0f);   // no delimiter on data rows
      for (int64_t c = 0; c < 5; ++c) {
        REQUIRE(is_bit(at3(s.inputs.all(), i, t, c)));
        REQUIRE(at3(s.targets.all(), i, t, c) == at3(s.inputs.all(), i, t, c));
      }
    }
    CHECK(at3(s.inputs.all(), i, L, 5) == 1.0f);   // the delimiter row
    for (int64_t c = 0; c < 5; ++c) CHECK(at3(s.inputs.all(), i, L, c) == 0.0f);
    CHECK(all_zero_from(s.inputs.all(), i, L + 1));
    CHECK(all_zero_from(s.targets.all(), i, L));
  }
  CHECK(lengths.size() >= 4);   // the lengths do vary

  // Bits are fair coins: about half are ones.
  double ones = 0, bits = 0;
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t t = 0; t < s.target_len.idata()[i]; ++t)
      for (int64_t c = 0; c < 5; ++c) { ones += at3(s.targets.all(), i, t, c); bits += 1; }
  CHECK(ones / bits > 0.4);
  CHECK(ones / bits < 0.6);
}

TEST_CASE("generators are deterministic given the seed, and the seed matters", "[unit][data-gen]") {
  CopyConfig cfg;
  const auto a = make_copy(cfg, {20, 5, 5}, 11), b = make_copy(cfg, {20, 5, 5}, 11);
  const auto c = make_copy(cfg, {20, 5, 5}, 12);
  for (int k = 0; k < 3; ++k) CHECK(same_split(a[k], b[k]));
  CHECK_FALSE(same_bits(a.train.inputs.all(), c.train.inputs.all()));

  // Each split has its own stream: a larger training set leaves valid and test unchanged
  // (with 20-bit-wide inputs no rejection happens to shift them).
  const auto d = make_copy(cfg, {35, 5, 5}, 11);
  CHECK(same_split(a.valid, d.valid));
  CHECK(same_split(a.test, d.test));
  CHECK(same_bits(a.train.inputs.all(), d.train.inputs.all().rows(0, 20)));

  ToyConfig toy;
  toy.task = ToyTask::sort;
  const auto t1 = make_toy_translation(toy, {30, 5, 5}, 4), t2 = make_toy_translation(toy, {30, 5, 5}, 4);
  for (int k = 0; k < 3; ++k) {
    CHECK(same_bits(t1[k].src.all(), t2[k].src.all()));
    CHECK(same_bits(t1[k].tgt.all(), t2[k].tgt.all()));
  }
}

TEST_CASE("repeat-copy: the target is the sequence repeated count times, then the end marker",
          "[unit][data-gen]") {
  RepeatCopyConfig cfg;
  cfg.width = 4;
  cfg.min_len = 1;
  cfg.max_len = 3;
  cfg.min_repeat = 1;
  cfg.max_repeat = 4;
  cfg.norm_repeat = 10;
  const auto splits = make_repeat_copy(cfg, {30, 5, 5}, 2);
  const SequenceSplit& s = splits.train;
  CHECK(s.inputs.shape() == Shape{30, 4, 6});
  CHECK(s.targets.shape() == Shape{30, 13, 5});

  // Graves's normalisation: mean 0 and variance 1 over 1..R.
  double sum = 0, sq = 0;
  for (int64_t c = 1; c <= 10; ++c) {
    sum += repeat_count_code(c, 10);
    sq += double(repeat_count_code(c, 10)) * repeat_count_code(c, 10);
  }
  CHECK(std::fabs(sum / 10) < 1e-6);
  CHECK(std::fabs(sq / 10 - 1) < 1e-5);

  std::set<int64_t> counts;
  for (int64_t i = 0; i < 30; ++i) {
    const int64_t L = s.input_len.idata()[i] - 1;
    REQUIRE(L >= 1);
    REQUIRE(L <= 3);
    CHECK(at3(s.inputs.all(), i, L, 4) == 1.0f);   // delimiter
    const float code = at3(s.inputs.all(), i, L, 5);
    int64_t c = 0;
    for (int64_t k = 1; k <= 4; ++k)
      if (code == repeat_count_code(k, 10)) c = k;
    REQUIRE(c >= 1);   // the count channel holds one of the codes
    counts.insert(c);
    REQUIRE(s.target_len.idata()[i] == c * L + 1);
    for (int64_t k = 0; k < c; ++k)
      for (int64_t t = 0; t < L; ++t) {
        REQUIRE(at3(s.targets.all(), i, k * L + t, 4) == 0.0f);
        for (int64_t ch = 0; ch < 4; ++ch) REQUIRE(at3(s.targets.all(), i, k * L + t, ch) == at3(s.inputs.all(), i, t, ch));
      }
    CHECK(at3(s.targets.all(), i, c * L, 4) == 1.0f);   // end marker
    for (int64_t ch = 0; ch < 4; ++ch) CHECK(at3(s.targets.all(), i, c * L, ch) == 0.0f);
    CHECK(all_zero_from(s.targets.all(), i, c * L + 1));
    for (int64_t t = 0; t < L; ++t) CHECK(at3(s.inputs.all(), i, t, 5) == 0.0f);
  }
  CHECK(counts.size() == 4);
}

TEST_CASE("assoc-recall: items between delimiters, a query, and the item after it as target",
          "[unit][data-gen]") {
  AssocRecallConfig cfg;   // Graves: 6 bits, 3 vectors per item, 2..6 items
  const auto splits = make_assoc_recall(cfg, {40, 5, 5}, 9);
  const SequenceSplit& s = splits.train;
  const int64_t W = 6, IL = 3;
  CHECK(s.inputs.shape() == Shape{40, 6 * 4 + 3 + 2, 8});
  CHECK(s.targets.shape() == Shape{40, 3, 6});
  for (int64_t i = 0; i < 40; ++i) {
    const int64_t len = s.input_len.idata()[i];
    const int64_t k = (len - IL - 2) / (IL + 1);
    REQUIRE(k * (IL + 1) + IL + 2 == len);
    REQUIRE(k >= 2);
    REQUIRE(k <= 6);
    REQUIRE(s.target_len.idata()[i] == IL);
    // Items: a delimiter row, then IL rows of bits.
    std::vector<std::vector<float>> items(static_cast<size_t>(k));
    for (int64_t a = 0; a < k; ++a) {
      const int64_t r0 = a * (IL + 1);
      REQUIRE(at3(s.inputs.all(), i, r0, W) == 1.0f);
      for (int64_t t = 1; t <= IL; ++t) {
        REQUIRE(at3(s.inputs.all(), i, r0 + t, W) == 0.0f);
        REQUIRE(at3(s.inputs.all(), i, r0 + t, W + 1) == 0.0f);
        for (int64_t c = 0; c < W; ++c) items[a].push_back(at3(s.inputs.all(), i, r0 + t, c));
      }
    }
    for (int64_t a = 0; a < k; ++a)
      for (int64_t b = 0; b < a; ++b) REQUIRE(items[a] != items[b]);   // distinct items
    // The query between two query delimiters; the target is the next item.
    const int64_t q0 = k * (IL + 1);
    REQUIRE(at3(s.inputs.all(), i, q0, W + 1) == 1.0f);
    REQUIRE(at3(s.inputs.all(), i, q0 + IL + 1, W + 1) == 1.0f);
    std::vector<float> query, target;
    for (int64_t t = 1; t <= IL; ++t)
      for (int64_t c = 0; c < W; ++c) query.push_back(at3(s.inputs.all(), i, q0 + t, c));
    for (int64_t t = 0; t < IL; ++t)
      for (int64_t c = 0; c < W; ++c) target.push_back(at3(s.targets.all(), i, t, c));
    const auto hit = std::find(items.begin(), items.end(), query);
    REQUIRE(hit != items.end());
    REQUIRE(hit + 1 != items.end());   // never the last item
    CHECK(*(hit + 1) == target);
    CHECK(all_zero_from(s.inputs.all(), i, len));
  }
}

TEST_CASE("priority-sort: the target is the highest-priority vectors, highest first",
          "[unit][data-gen]") {
  PrioritySortConfig cfg;
  cfg.width = 5;
  cfg.in_n = 9;
  cfg.out_n = 6;
  const auto splits = make_priority_sort(cfg, {25, 5, 5}, 5);
  const SequenceSplit& s = splits.train;
  const int64_t W = 5;
  CHECK(s.inputs.shape() == Shape{25, 10, 7});
  CHECK(s.targets.shape() == Shape{25, 6, 5});
  for (int64_t i = 0; i < 25; ++i) {
    REQUIRE(s.input_len.idata()[i] == 10);
    REQUIRE(s.target_len.idata()[i] == 6);
    CHECK(at3(s.inputs.all(), i, 9, W + 1) == 1.0f);   // delimiter
    std::vector<std::pair<float, std::vector<float>>> rows;
    for (int64_t t = 0; t < 9; ++t) {
      const float p = at3(s.inputs.all(), i, t, W);
      REQUIRE(p >= -1.0f);
      REQUIRE(p < 1.0f);
      std::vector<float> bits;
      for (int64_t c = 0; c < W; ++c) bits.push_back(at3(s.inputs.all(), i, t, c));
      rows.emplace_back(p, bits);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (int64_t t = 0; t < 6; ++t) {
      std::vector<float> got;
      for (int64_t c = 0; c < W; ++c) got.push_back(at3(s.targets.all(), i, t, c));
      REQUIRE(got == rows[t].second);
    }
  }
}

TEST_CASE("reverse and sort: targets are the reversed or sorted source, then EOS",
          "[unit][data-gen]") {
  ToyConfig cfg;
  cfg.vocab = 9;
  cfg.min_len = 2;
  cfg.max_len = 6;
  for (ToyTask task : {ToyTask::reverse, ToyTask::sort}) {
    cfg.task = task;
    const auto splits = make_toy_translation(cfg, {50, 10, 10}, 8);
    const TokenSplit& s = splits.train;
    CHECK(s.src.shape() == Shape{50, 6});
    CHECK(s.tgt.shape() == Shape{50, 7});
    REQUIRE(s.src.dtype() == DType::i32);
    for (int64_t i = 0; i < 50; ++i) {
      const int64_t L = s.src_len.idata()[i];
      REQUIRE(L >= 2);
      REQUIRE(L <= 6);
      REQUIRE(s.tgt_len.idata()[i] == L + 1);
      std::vector<int32_t> src = row_ints(s.src.all(), i, 6), tgt = row_ints(s.tgt.all(), i, 7);
      for (int64_t t = 0; t < L; ++t) {
        REQUIRE(src[t] >= kFirstToken);
        REQUIRE(src[t] < 9);
      }
      for (int64_t t = L; t < 6; ++t) REQUIRE(src[t] == kPad);
      CHECK(tgt[L] == kEos);
      for (int64_t t = L + 1; t < 7; ++t) REQUIRE(tgt[t] == kPad);
      std::vector<int32_t> want(src.begin(), src.begin() + L);
      if (task == ToyTask::reverse) std::reverse(want.begin(), want.end());
      else std::sort(want.begin(), want.end());
      CHECK(std::vector<int32_t>(tgt.begin(), tgt.begin() + L) == want);
    }
  }
  CHECK(toy_vocabulary(7) == std::vector<std::string>{"<pad>", "<s>", "</s>", "<unk>", "t4", "t5", "t6"});
}

TEST_CASE("splits never share an input, even when the task has few distinct inputs",
          "[unit][data-gen]") {
  // 2 tokens, lengths 1..3: only 2 + 4 + 8 = 14 distinct sources, so repeats are frequent.
  ToyConfig toy;
  toy.vocab = 6;
  toy.min_len = 1;
  toy.max_len = 3;
  const auto t = make_toy_translation(toy, {8, 3, 3}, 1);
  std::set<std::vector<int32_t>> seen[3];
  for (int k = 0; k < 3; ++k)
    for (int64_t i = 0; i < t[k].src.dim(0); ++i)
      seen[k].insert(row_ints(t[k].src.all(), i, t[k].src_len.idata()[i]));
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < a; ++b)
      for (const auto& x : seen[a]) CHECK(seen[b].count(x) == 0);

  // 2-bit copy vectors of length 1..2: 4 + 16 distinct inputs.
  CopyConfig copy;
  copy.width = 2;
  copy.min_len = 1;
  copy.max_len = 2;
  const auto c = make_copy(copy, {10, 3, 3}, 1);
  const auto train = input_set(c.train), valid = input_set(c.valid), test = input_set(c.test);
  for (const auto& x : valid) CHECK(train.count(x) == 0);
  for (const auto& x : test) CHECK((train.count(x) == 0 && valid.count(x) == 0));

  // When the earlier splits use up every input, generation stops with a clear error.
  toy.max_len = 1;   // two distinct sources in all
  REQUIRE_THROWS_WITH(make_toy_translation(toy, {20, 2, 2}, 1),
                      Catch::Contains("cannot draw 2 valid examples of the reverse task") &&
                          Catch::Contains("too few distinct inputs"));
}

TEST_CASE("generators reject inconsistent configurations, naming the field", "[unit][data-gen]") {
  CopyConfig copy;
  copy.min_len = 5;
  copy.max_len = 4;
  REQUIRE_THROWS_AS(make_copy(copy, {}, 1), ConfigError);
  REQUIRE_THROWS_WITH(make_copy(copy, {}, 1), Catch::Contains("copy: max_len (4) must be >= min_len (5)"));
  REQUIRE_THROWS_WITH(make_copy(CopyConfig{}, {-1, 1, 1}, 1), Catch::Contains("split sizes must be >= 0"));

  RepeatCopyConfig rep;
  rep.norm_repeat = 1;
  REQUIRE_THROWS_WITH(make_repeat_copy(rep, {1, 1, 1}, 1), Catch::Contains("norm_repeat must be >= 2, got 1"));

  AssocRecallConfig ar;
  ar.width = 1;
  ar.item_len = 2;   // 4 possible items
  ar.max_items = 5;
  REQUIRE_THROWS_WITH(make_assoc_recall(ar, {1, 1, 1}, 1), Catch::Contains("cannot make 5 distinct items"));
  ar.min_items = 1;
  REQUIRE_THROWS_WITH(make_assoc_recall(ar, {1, 1, 1}, 1), Catch::Contains("min_items must be >= 2"));

  PrioritySortConfig ps;
  ps.out_n = 21;
  REQUIRE_THROWS_WITH(make_priority_sort(ps, {1, 1, 1}, 1), Catch::Contains("out_n must be in [1, in_n = 20], got 21"));

  ToyConfig toy;
  toy.vocab = 4;
  REQUIRE_THROWS_WITH(make_toy_translation(toy, {1, 1, 1}, 1),
                      Catch::Contains("reverse: vocab must be > 4 (ids 0-3 are reserved), got 4"));
}

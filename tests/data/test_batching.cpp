#include "attn/data/batching.hpp"

#include <algorithm>

#include "test_support.hpp"

using namespace attn;
using data::BatchingOptions;

namespace {
std::vector<int32_t> random_lengths(int n, int max_len, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> len(static_cast<size_t>(n));
  for (auto& l : len) l = static_cast<int32_t>(1 + rng.uniform_int(max_len));
  return len;
}
}  // namespace

TEST_CASE("batching: every example once per epoch, within the token budget", "[unit][batching]") {
  const std::vector<int32_t> len = random_lengths(1000, 40, 3);
  for (const int64_t max_batch : {0, 16}) {
    const BatchingOptions opts{.max_tokens = 256, .max_batch = max_batch, .shuffle = true, .seed = 7};
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      const auto batches = data::make_batches(len, opts, epoch);
      std::vector<int> seen(len.size(), 0);
      for (const auto& b : batches) {
        REQUIRE(!b.empty());
        int32_t lmax = 0;
        for (const int64_t i : b) ++seen[static_cast<size_t>(i)], lmax = std::max(lmax, len[static_cast<size_t>(i)]);
        CHECK(static_cast<int64_t>(b.size()) * lmax <= 256);
        if (max_batch) CHECK(static_cast<int64_t>(b.size()) <= max_batch);
      }
      CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
    }
  }
}

TEST_CASE("batching: batches group similar lengths and fill the budget greedily", "[unit][batching]") {
  // Lengths 1,1,2,2,3,3 with budget 4: [1,1] then 2,2 -> 2*2=4 fits, then [3] [3].
  const std::vector<int32_t> len = {3, 1, 2, 1, 3, 2};
  auto batches = data::make_batches(len, {.max_tokens = 4, .max_batch = 0, .shuffle = false, .seed = 1}, 0);
  CHECK(batches == std::vector<std::vector<int64_t>>{{1, 3}, {2, 5}, {0}, {4}});
  // A budget of 6 takes the 1s and one 2 (3*2 = 6), then 2 and a 3 (2*3 = 6), then the last 3.
  batches = data::make_batches(len, {.max_tokens = 6, .max_batch = 0, .shuffle = false, .seed = 1}, 0);
  CHECK(batches == std::vector<std::vector<int64_t>>{{1, 3, 2}, {5, 0}, {4}});
}

TEST_CASE("batching: deterministic in (seed, epoch), different across epochs", "[unit][batching]") {
  const std::vector<int32_t> len = random_lengths(500, 20, 4);
  const BatchingOptions opts{.max_tokens = 200, .max_batch = 0, .shuffle = true, .seed = 11};
  const auto a = data::make_batches(len, opts, 2);
  CHECK(a == data::make_batches(len, opts, 2));
  CHECK(a != data::make_batches(len, opts, 3));
  BatchingOptions other = opts;
  other.seed = 12;
  CHECK(a != data::make_batches(len, other, 2));
}

TEST_CASE("batching: bad options and over-long examples are refused", "[unit][batching]") {
  const std::vector<int32_t> len = {3, 9, 2};
  REQUIRE_THROWS_WITH(data::make_batches(len, {.max_tokens = 8}, 0),
                      Catch::Contains("example 1 has 9 tokens, more than max_tokens 8"));
  REQUIRE_THROWS_WITH(data::make_batches(len, {.max_tokens = 0}, 0), Catch::Contains("max_tokens must be > 0"));
  REQUIRE_THROWS_WITH(data::make_batches(std::vector<int32_t>{2, 0}, {.max_tokens = 8}, 0),
                      Catch::Contains("example 1 has length 0"));
  CHECK(data::make_batches(std::vector<int32_t>{}, {.max_tokens = 8}, 0).empty());
}

TEST_CASE("gather_batch and pad_sequences pad to the longest selected row", "[unit][batching]") {
  const Tensor seqs = Tensor::from_ints({3, 4}, {5, 6, 2, 0,  7, 2, 0, 0,  4, 5, 6, 2});
  const Tensor lens = Tensor::from_ints({3}, {3, 2, 4});
  const std::vector<int64_t> idx = {1, 0};
  const data::PaddedBatch b = data::gather_batch(seqs, lens, idx);
  CHECK(b.tokens.shape() == Shape{2, 3});
  CHECK(std::vector<int32_t>(b.tokens.idata(), b.tokens.idata() + 6) == std::vector<int32_t>{7, 2, 0, 5, 6, 2});
  CHECK(std::vector<int32_t>(b.lengths.idata(), b.lengths.idata() + 2) == std::vector<int32_t>{2, 3});
  REQUIRE_THROWS_WITH(data::gather_batch(seqs, lens, std::vector<int64_t>{3}),
                      Catch::Contains("index 3 is outside [0, 3)"));
  REQUIRE_THROWS_WITH(data::gather_batch(seqs, Tensor::from_ints({2}, {1, 1}), idx),
                      Catch::Contains("gather_batch: lengths [N] has shape [2], expected [3]"));

  const data::PaddedBatch p = data::pad_sequences({{4, 5}, {}, {6, 7, 8}});
  CHECK(p.tokens.shape() == Shape{3, 3});
  CHECK(std::vector<int32_t>(p.tokens.idata(), p.tokens.idata() + 9) == std::vector<int32_t>{4, 5, 0, 0, 0, 0, 6, 7, 8});
  CHECK(std::vector<int32_t>(p.lengths.idata(), p.lengths.idata() + 3) == std::vector<int32_t>{2, 0, 3});
  CHECK(data::pad_sequences({{4}}, 5).tokens.shape() == Shape{1, 5});
  CHECK(data::pair_lengths(Tensor::from_ints({2}, {3, 1}), Tensor::from_ints({2}, {2, 4})) == std::vector<int32_t>{3, 4});
}

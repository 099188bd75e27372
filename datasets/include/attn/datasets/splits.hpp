// Train/valid/test splits for the synthetic generators: sizes, per-split random streams,
// and the rule that keeps the splits disjoint.
//
// Policy (datasets/README.md, "Splits"): each split draws from its own stream
// `Rng(seed).fork(k)` (k = 0 train, 1 valid, 2 test), so the same --seed gives the same bits
// and the valid set does not move when only --n changes (except through the rejections
// below). An example whose input already occurs in an earlier split is drawn again, so
// valid ∩ train = ∅ and test ∩ (train ∪ valid) = ∅; repeats inside one split are kept, as
// they are part of the task's distribution. Inputs are compared through a 64-bit hash of
// their bytes: a collision can only reject a new example needlessly, never admit a repeat.
// When the task has too few distinct inputs to fill a split, generation throws ConfigError
// instead of looping.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>

#include "attn/core/error.hpp"
#include "attn/core/rng.hpp"

namespace attn::datasets {

struct SplitSizes {
  int64_t train = 10000;
  int64_t valid = 1000;
  int64_t test = 1000;
};

inline constexpr const char* kSplitNames[3] = {"train", "valid", "test"};

template <class Split>
struct Splits {
  Split train, valid, test;
  Split& operator[](int k) { return k == 0 ? train : k == 1 ? valid : test; }
  const Split& operator[](int k) const { return k == 0 ? train : k == 1 ? valid : test; }
};

// Hashes of the inputs drawn so far.
using KeySet = std::unordered_set<uint64_t>;

// A 64-bit hash of `bytes` bytes at `data`, mixed with `salt` (e.g. the example's length).
uint64_t hash_bytes(const void* data, size_t bytes, uint64_t salt);

// Throws ConfigError "<task>: split sizes must be >= 0, got ..." on a negative size.
void check_sizes(const std::string& task, const SplitSizes& sizes);

// Fills one split of n examples. draw(rng, i) writes example i (all of its row, padding
// included, since a rejected draw is overwritten) and returns the hash of its input. Draws
// whose hash is in `earlier` are repeated; accepted hashes are added to `drawn`.
template <class Draw>
void draw_disjoint(const std::string& task, const char* split, int64_t n, Rng& rng,
                   const KeySet& earlier, KeySet& drawn, Draw&& draw) {
  // Generous: a split is only refused when nearly every draw repeats an earlier split.
  const int64_t max_draws = 100 * n + 1000;
  int64_t draws = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (;;) {
      if (++draws > max_draws)
        throw ConfigError("cannot draw " + std::to_string(n) + " " + split + " examples of the " + task +
                          " task that differ from the earlier splits (" +
                          std::to_string(max_draws) + " draws, " + std::to_string(i) +
                          " found): the task has too few distinct inputs; use longer sequences, "
                          "a larger vocabulary or width, or fewer examples");
      const uint64_t key = draw(rng, i);
      if (!earlier.count(key)) {
        drawn.insert(key);
        break;
      }
    }
  }
}

// Draws train, valid and test in that order with the policy above. make_split(n, rng,
// earlier, drawn, split_name) returns one split (normally through draw_disjoint).
template <class Split, class MakeSplit>
Splits<Split> draw_splits(const SplitSizes& sizes, uint64_t seed, MakeSplit&& make_split) {
  Splits<Split> out;
  const int64_t n[3] = {sizes.train, sizes.valid, sizes.test};
  const Rng root(seed);
  KeySet earlier;
  for (int k = 0; k < 3; ++k) {
    Rng rng = root.fork(static_cast<uint64_t>(k));
    KeySet drawn;
    out[k] = make_split(n[k], rng, earlier, drawn, kSplitNames[k]);
    earlier.merge(drawn);
  }
  return out;
}

}  // namespace attn::datasets

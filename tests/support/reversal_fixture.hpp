// A word vocabulary and a split of reversed random sentences over it, for tests that train a
// token model on a task it can learn (header-only, like mnist_fixture.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/data/batching.hpp"
#include "attn/data/token_data.hpp"
#include "attn/data/vocab.hpp"

namespace attn::test {

// The reserved tokens, then w<id> for every id up to size - 1.
inline data::Vocab word_vocab(int32_t size) {
  std::vector<std::string> tokens(data::kReservedTokens, data::kReservedTokens + data::kNumReserved);
  for (int32_t id = data::kNumReserved; id < size; ++id) {
    std::string token(1, 'w');   // appended, not concatenated: GCC 12's -Wrestrict
    token += std::to_string(id);
    tokens.push_back(token);
  }
  return data::Vocab::from_tokens(tokens);
}

// n random sentences of min_len to max_len words of word_vocab(vocab), each with its reversal
// (ending with EOS) as the target.
inline data::TokenSplit reversal_split(int64_t n, int32_t vocab, int64_t min_len, int64_t max_len) {
  Rng rng(11);
  std::vector<std::vector<int32_t>> src, tgt;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> s;
    for (int64_t t = 0, len = min_len + rng.uniform_int(max_len - min_len + 1); t < len; ++t)
      s.push_back(static_cast<int32_t>(data::kNumReserved + rng.uniform_int(vocab - data::kNumReserved)));
    src.push_back(s);
    std::vector<int32_t> r(s.rbegin(), s.rend());
    r.push_back(data::kEos);
    tgt.push_back(std::move(r));
  }
  const data::PaddedBatch a = data::pad_sequences(src), b = data::pad_sequences(tgt);
  return {.name = "train", .src = a.tokens, .src_len = a.lengths, .tgt = b.tokens, .tgt_len = b.lengths, .segments = {}};
}

}  // namespace attn::test

// Toy translation tasks over random tokens: `reverse` (the target is the source backwards) and
// `sort` (the target is the source in ascending id order). They exercise encoder-decoder
// attention with known, perfectly learnable alignments: reverse is an anti-diagonal, sort a
// permutation.
//
// Layout (datasets/README.md): ids 0-3 are PAD, BOS, EOS, UNK and real tokens are 4..vocab-1.
//   /<split>/src      [N, S] int32  source tokens, no BOS or EOS, padded with 0; S = max_len
//   /<split>/src_len  [N]    int32
//   /<split>/tgt      [N, T] int32  target tokens followed by EOS, padded with 0; T = max_len + 1
//   /<split>/tgt_len  [N]    int32  counts the EOS
//   /vocab/src, /vocab/tgt  [vocab] strings "<pad>", "<s>", "</s>", "<unk>", "t4", ...
// A decoder is fed BOS followed by tgt[:tgt_len - 1] and trained to emit tgt[:tgt_len].
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/data/token_data.hpp"
#include "attn/data/vocab.hpp"
#include "attn/datasets/splits.hpp"

namespace attn::io { class File; }

namespace attn::datasets {

// The reserved ids shared by every token data set (attn/data/vocab.hpp).
using data::kBos;
using data::kEos;
using data::kPad;
using data::kUnk;
inline constexpr int32_t kFirstToken = data::kNumReserved;

enum class ToyTask { reverse, sort };
const char* toy_task_name(ToyTask task);   // "reverse", "sort"

struct ToyConfig {
  ToyTask task = ToyTask::reverse;
  int64_t vocab = 14;     // total ids, the 4 reserved ones included: 10 real tokens
  int64_t min_len = 3;    // source length range, in tokens
  int64_t max_len = 10;
};

using data::TokenSplit;   // the layout, read and written by attn/data/token_data.hpp

// "<pad>", "<s>", "</s>", "<unk>", then "t4" ... "t<vocab-1>".
std::vector<std::string> toy_vocabulary(int64_t vocab);

// Throws ConfigError on an inconsistent configuration; draws the splits with the policy of
// splits.hpp (no source sequence occurs in two splits).
Splits<TokenSplit> make_toy_translation(const ToyConfig& cfg, const SplitSizes& sizes, uint64_t seed);

// Writes /<split>/{src, src_len, tgt, tgt_len} for the three splits.
void write_splits(io::File& file, const Splits<TokenSplit>& splits);
// Writes /vocab/src and /vocab/tgt.
void write_vocabularies(io::File& file, const std::vector<std::string>& src,
                        const std::vector<std::string>& tgt);

}  // namespace attn::datasets

// What every family's decoder takes and returns (families/<family>/decode.hpp): one shape of
// options and one of results, over the searches of search.hpp. A family offers
//   decode::Decoded greedy(const Model&, <its inputs>, const decode::DecodeOptions&);
//   decode::Decoded beam_search(const Model&, <its inputs>, const decode::DecodeOptions&);
// in its own namespace, so that generic code (train::decode_batch) finds them by
// argument-dependent lookup; its header says which length penalty beam search divides by, and
// the names and shapes of its attention.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn::decode {

struct DecodeOptions {
  int64_t max_len = 100;         // >= 1 tokens per output at most, EOS excluded
  int64_t beam = 1;              // BW >= 1 (beam_search)
  float length_penalty = 0.0f;   // alpha >= 0 of the family's length penalty (beam_search); 0: raw log P
  bool want_attention = false;   // return the attention behind every token
};

struct Decoded {
  std::vector<std::vector<int32_t>> tokens;   // per input, without BOS, ending before EOS
  // The tokens' summed log-probability (EOS included when it was produced); beam search: divided
  // by the family's length penalty lp(|Y|).
  std::vector<float> scores;
  // With want_attention: the family's attention by name, each [N, ..., T, S] with row t the
  // weights behind token t (T the longest output), zero past an output's tokens.
  NamedTensors attention;
  // Any further per-input results of the family's decoder, by dataset path in the output file,
  // each [N, ...] (a non-autoregressive model's "iterations/tokens", for one).
  NamedTensors outputs;
};

}  // namespace attn::decode

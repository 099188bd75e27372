// Attention masks: which keys each query may attend to, described rather than materialised.
//
// A mask is a handful of numbers applied on the fly: key lengths (padding), a causal flag and a
// window radius. Together they leave every query row one contiguous range of visible keys
// [lo, hi), which the attention core uses both to mask scores and to skip whole key blocks
// (a window of radius P over S keys costs O(T P D), not O(T S D)). An explicit [B or 1, T, S]
// int32 tensor (nonzero = visible) covers anything else and is ANDed with the structured parts.
//
// Query row t sits at position `query_offset + t` (0 by default: query i and key i are the same
// position when T == S). With a KV cache, T new queries over S = past + T keys use
// query_offset = S - T.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "attn/core/tensor.hpp"

namespace attn::ops {

struct AttentionMask {
  Tensor key_lengths;         // int32 [B]: keys j >= key_lengths[b] are masked (padding); undefined = none
  bool causal = false;        // keys j > position(t) are masked
  int64_t window = -1;        // keys with |position(t) - j| > window are masked; -1 = no window
  int64_t query_offset = 0;   // position(t) = query_offset + t
  Tensor keep;                // optional int32 [B or 1, T, S]: 0 masks the key; undefined = none

  static AttentionMask none() { return {}; }
  static AttentionMask padding(Tensor key_lengths) {
    AttentionMask m;
    m.key_lengths = std::move(key_lengths);
    return m;
  }
  static AttentionMask causal_mask() {
    AttentionMask m;
    m.causal = true;
    return m;
  }
  static AttentionMask window_mask(int64_t radius, bool causal = false) {
    AttentionMask m;
    m.window = radius;
    m.causal = causal;
    return m;
  }
};

// The visible keys of one query row: the range [lo, hi) and, when the mask has an explicit part,
// that row of it (indexed by absolute key j).
struct RowMask {
  int64_t lo = 0;
  int64_t hi = 0;
  const int32_t* keep = nullptr;

  bool visible(int64_t j) const { return j >= lo && j < hi && (keep == nullptr || keep[j] != 0); }
};

// Validates a mask against query rows T and keys S of a batch of B, naming the op in `label`:
// key_lengths int32 [B] with values in [0, S], window >= -1, query_offset >= 0, keep int32
// [B or 1, T, S]. Throws ShapeError / ConfigError / DataError.
void check_attention_mask(const AttentionMask& mask, int64_t B, int64_t T, int64_t S,
                          const std::string& label);

// The visible keys of row t of batch entry b. `lengths` is mask.key_lengths' data or nullptr.
inline RowMask row_mask(const AttentionMask& mask, const int32_t* lengths, int64_t b, int64_t t, int64_t T,
                        int64_t S) {
  int64_t lo = 0, hi = S;
  if (lengths != nullptr) hi = lengths[b];
  const int64_t pos = mask.query_offset + t;
  if (mask.causal) hi = std::min(hi, pos + 1);
  if (mask.window >= 0) {
    lo = std::max<int64_t>(0, pos - mask.window);
    hi = std::min(hi, pos + mask.window + 1);
  }
  RowMask r;
  r.lo = std::min(lo, S);
  r.hi = std::max(r.lo, hi);
  if (mask.keep.defined() && !mask.keep.empty()) {
    const int64_t mb = mask.keep.dim(0) == 1 ? 0 : b;
    r.keep = mask.keep.idata() + (mb * T + t) * S;
  }
  return r;
}

}  // namespace attn::ops

// Embedding lookup: row ids[i] of a table [V, E] for every id, and its backward, which
// scatter-adds the output gradient into the table's rows. Ids are int32 (the dataset token
// dtype) and are checked against [0, V) before anything is read, so bad data fails with the
// id and where it sits instead of reading out of bounds.
#pragma once
#include <cstdint>

#include "attn/core/tensor.hpp"

namespace attn::ops {

inline constexpr int32_t kNoPadding = -1;

// y[..., :] = table[ids[...], :].   ids: [...] int32 in [0, V)   table: [V, E]   ->   y: [..., E]
// padding_id (kNoPadding, or an id in [0, V)) names a row that receives no gradient, as in
// PyTorch's nn.Embedding(padding_idx); its forward value is the table row as stored.
// Throws DataError "embedding: id 57 at position [1, 3] of ids [2, 5] is out of range [0, V = 50)".
struct EmbeddingCache {
  Tensor ids;                          // shared with the caller's ids, not copied
  int32_t padding_id = kNoPadding;
};
Tensor embedding_forward(const Tensor& ids, const Tensor& table, EmbeddingCache* cache,
                         int32_t padding_id = kNoPadding);

// dy: [..., E]. Adds dy's rows into dtable [V, E] (dtable[ids[i]] += dy[i]), skipping the
// padding id. Ids have no gradient, so nothing is returned. The sum over repeated ids runs in
// position order whatever the thread count (threads split E, not the positions).
void embedding_backward(const Tensor& dy, const EmbeddingCache& cache, Tensor& dtable);

}  // namespace attn::ops

// Embedding bags: per bag, a weighted sum of table rows picked by id (PyTorch's
// nn.EmbeddingBag(mode="sum") with per_sample_weights; the bag-of-words and position-encoded
// sentence embeddings of memory networks, Sukhbaatar et al. 2015, sec. 4.1), and its backward.
//
// Bags. Every row of ids [..., W] (int32, at least [N, W]; N rows in all, numbered n in memory
// order) holds a bag: its first J_n ids, where J_n = lengths[n] when lengths [...] are given, else
// the number of ids before the row's first padding id (rows are bags padded at the end;
// kNoPadding: all W). Unlike PyTorch's padding_idx, which skips the padding id wherever it
// stands, a bag here ends at it: that is what gives a bag the length J that position weights
// depend on. lengths[n] = -1 marks an absent bag, for bags laid out in a padded grid (a story's
// sentence slots, of which only some hold sentences): its rows of y are not written (they hold no
// defined value) and its rows of dy are not read.
//
// T tables [V, E] may be read with the same bags at once (the memory network embeds every
// sentence with each of its hops' tables): for t < T,
//
//   y[t, n] = start_t[start_ids[n]] + Σ_{j < J_n} w[n, j] · l[J_n, j] ∘ table_t[ids[n, j]]
//
// y [T, ..., E], summed in that order (the start row first, then the ids in bag order), where
//   w  sample_weights [..., W]: a scalar per id (PyTorch's per_sample_weights), default 1;
//   l  position_weights [L + 1, L, E], L >= W: row (J, j) weighs the j-th id of a J-id bag
//      elementwise (position encoding, Sukhbaatar et al.'s l_kj); constants, default 1;
//   start tables, one [R, E] per table, with start_ids [...]: a row every bag starts from (the
//      memory network's temporal encoding; a token's position or segment embedding), default 0.
//
// Every entry of ids, ended bags' and absent bags' included, must be an id in [0, V) (checked,
// as ops::embedding does: a DataError names the id and where it sits).
//
// Cost and threads. For E < 68 the sum of a bag stays in registers across its rows (kernels
// instantiated for every count of 4-float blocks; a sum kept in memory is stored and reloaded
// for every row it adds), wider rows go block by block. The forward splits the bags into
// contiguous blocks of about equal work, one per part; the backward gives each part whole tables
// (and, from E = 128, 64-column blocks of them): every part walks all bags in order, so a table
// row is written by one thread only and every element is summed in bag order. Splitting a table
// row's columns between threads that share its cache lines made the memory network's narrow rows
// (E = 20, 80 bytes) slower on two threads than on one. Below kEmbeddingBagParallelMinWork
// multiply-adds a call runs on the calling thread. Results are the same bits at any thread count.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/ops/embedding.hpp"   // kNoPadding

namespace attn::ops {

// Multiply-adds below which an embedding bag's call, or a model's loop over such rows, runs on
// the calling thread: these rows are so cheap that waking the second thread and its cache misses
// on rows the first one wrote outweigh half of the work below it (measured for the memory
// network's regions: families/memnet/model.hpp).
inline constexpr int64_t kEmbeddingBagParallelMinWork = int64_t{1} << 22;

struct EmbeddingBagOptions {
  int32_t padding_id = kNoPadding;   // a bag ends at its row's first padding id (not with lengths)
  Tensor lengths;                    // [...] int32 in [-1, W]: J_n, or -1 for an absent bag
  Tensor sample_weights;             // [..., W] float32: w
  Tensor position_weights;           // [L + 1, L, E] float32, L >= W: l (constant: no gradient)
  Tensor start_ids;                  // [...] int32 in [0, R): with start tables
};

// What the backward needs: the bags, their options and, with sample weights, the tables (their
// gradient reads them). Every tensor is shared with the caller's, not copied. A caller may keep
// its bags' options here from the start and pass cache.options to the forward (the memory
// network does: one set of tensors a step fewer to make).
struct EmbeddingBagCache {
  EmbeddingBagOptions options;     // the forward's
  Tensor ids;                      // [..., W]
  std::optional<Tensor> counted;   // [...] J_n counted from the padding id (without lengths)
  std::vector<int32_t> present;    // the present bags' rows of ids, in order
  std::vector<Tensor> tables;      // T [V, E], with sample weights only
  int64_t T = 0, V = 0, E = 0;
  int64_t start_rows = 0;    // R (0: no start tables)
  int64_t ids_in_bags = 0;   // Σ_n J_n over the present bags

  const Tensor& lengths() const { return counted ? *counted : options.lengths; }
};

// ids: [..., W] int32   tables: T >= 1 tables [V, E]   start_tables: none or T tables [R, E]
// -> y: [T, ..., E] (absent bags' rows unwritten). Tables are passed by pointer, as ParamList
// does, so that a model hands over its parameters' values without copying their handles.
// Throws ShapeError for a wrong shape ("embedding_bag: tables[1] [V, E] has shape [7, 3], expected
// [5, 3]"), DataError for an id or length out of range, ConfigError for lengths and a padding id
// together.
Tensor embedding_bag_forward(const Tensor& ids, std::span<const Tensor* const> tables,
                             std::span<const Tensor* const> start_tables, const EmbeddingBagOptions& options,
                             EmbeddingBagCache* cache);

// The forward in two steps, for a model that sums the bags inside its own loop over rows (the
// memory network embeds an example's sentences just before its hops read them, while they are
// still in cache; a separate pass over the whole batch writes a tensor larger than the cache).
// embedding_bag_prepare checks what embedding_bag_forward checks, fills `cache` and counts the
// multiply-adds of every bag, and returns y [T, ..., E] with no row written; embedding_bag_sum
// then writes the rows of the present bags among [n0, n1) (bags numbered in ids' memory order),
// from the tables (and start tables) given to prepare, on the calling thread. Calls over disjoint
// ranges may run on different threads. The same bits as embedding_bag_forward.
Tensor embedding_bag_prepare(const Tensor& ids, std::span<const Tensor* const> tables,
                             std::span<const Tensor* const> start_tables, const EmbeddingBagOptions& options,
                             EmbeddingBagCache& cache);
void embedding_bag_sum(const EmbeddingBagCache& cache, std::span<const Tensor* const> tables,
                       std::span<const Tensor* const> start_tables, int64_t n0, int64_t n1, Tensor& y);

// dy: [T, ..., E]. ADDS into dtables (T of [V, E]) dtable_t[ids[n, j]] += w[n, j] l[J_n, j] ∘ dy[t, n],
// and into dstart_tables (T of [R, E], or empty: no start-row gradient wanted)
// dstart_t[start_ids[n]] += dy[t, n]. Returns the sample weights' gradient, a new [..., W] tensor
// (dw[n, j] = Σ_t dy[t, n] · (l[J_n, j] ∘ table_t[ids[n, j]]), 0 beyond a bag's end and for absent
// bags) when the forward had sample weights, else an empty tensor.
Tensor embedding_bag_backward(const Tensor& dy, const EmbeddingBagCache& cache, std::span<Tensor* const> dtables,
                              std::span<Tensor* const> dstart_tables);

// ---- One bag of consecutive rows, for a model that runs bags inside its own per-row loops ----
// The same register-resident kernels on raw rows, without checks or threads: the memory
// network's hops, o = Σ_i p_i c_i over one example's memory slots, and their backward.

// out[0, E) += Σ_{i<n} w[i] rows[i, :], rows [n, E] contiguous (accumulated from out's value,
// rows in order).
void weighted_rows_sum(const float* rows, int64_t E, const float* w, int64_t n, float* out);

// out[i] = v · rows[i, :] for i < n (WRITTEN), rows [n, E] contiguous: the scores of a vector
// against one example's memory slots (four partial sums, then the tail, as the backward's dw).
void rows_dot(const float* rows, int64_t E, const float* v, int64_t n, float* out);

// Its backward from g = dout [E]: dw[i] = g · rows[i] (WRITTEN; skipped when dw is null, and then
// rows may be null), and drows[i] = w[i] g, WRITTEN, or ADDED when accumulate.
void weighted_rows_sum_backward(const float* rows, int64_t E, const float* w, int64_t n, const float* g, float* dw,
                                float* drows, bool accumulate);

}  // namespace attn::ops

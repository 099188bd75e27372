// Length-bucketed batching and padding (see batching.hpp).
#include "attn/data/batching.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "attn/core/error.hpp"
#include "attn/core/rng.hpp"

namespace attn::data {

std::vector<std::vector<int64_t>> make_batches(std::span<const int32_t> lengths,
                                               const BatchingOptions& opts, int64_t epoch) {
  if (opts.max_tokens <= 0)
    throw ConfigError("batching: max_tokens must be > 0, got " + std::to_string(opts.max_tokens));
  if (opts.max_batch < 0)
    throw ConfigError("batching: max_batch must be >= 0 (0: no limit), got " + std::to_string(opts.max_batch));
  if (epoch < 0) throw ConfigError("batching: epoch must be >= 0, got " + std::to_string(epoch));
  const int64_t n = static_cast<int64_t>(lengths.size());
  for (int64_t i = 0; i < n; ++i) {
    if (lengths[i] < 1)
      throw DataError("batching: example " + std::to_string(i) + " has length " +
                      std::to_string(lengths[i]) + ", expected >= 1");
    if (lengths[i] > opts.max_tokens)
      throw ConfigError("batching: example " + std::to_string(i) + " has " + std::to_string(lengths[i]) +
                        " tokens, more than max_tokens " + std::to_string(opts.max_tokens) +
                        "; raise max_tokens or drop long examples");
  }

  // 1. Sort by (length, random key); the key stream depends on seed and epoch only.
  Rng rng = Rng(opts.seed).fork(static_cast<uint64_t>(epoch));
  std::vector<uint32_t> key(static_cast<size_t>(n), 0);
  if (opts.shuffle)
    for (auto& k : key) k = rng.next_u32();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (lengths[a] != lengths[b]) return lengths[a] < lengths[b];
    if (key[a] != key[b]) return key[a] < key[b];
    return a < b;   // equal keys (or no shuffle): index order keeps the sort deterministic
  });

  // 2. Greedy cut: lengths ascend, so the newest member's length is the batch's Lmax.
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> current;
  for (const int64_t i : order) {
    const int64_t size = static_cast<int64_t>(current.size()) + 1;
    const bool fits = size * lengths[i] <= opts.max_tokens && (opts.max_batch == 0 || size <= opts.max_batch);
    if (!fits) batches.push_back(std::move(current)), current.clear();
    current.push_back(i);
  }
  if (!current.empty()) batches.push_back(std::move(current));

  // 3. Shuffle the batch order.
  if (opts.shuffle)
    for (int64_t i = static_cast<int64_t>(batches.size()) - 1; i > 0; --i)
      std::swap(batches[static_cast<size_t>(i)], batches[static_cast<size_t>(rng.uniform_int(i + 1))]);
  return batches;
}

std::vector<int32_t> pair_lengths(const Tensor& src_len, const Tensor& tgt_len) {
  check_tensor(src_len, {kAny}, "pair_lengths: src_len [N]", DType::i32);
  check_tensor(tgt_len, {src_len.dim(0)}, "pair_lengths: tgt_len [N]", DType::i32);
  std::vector<int32_t> out(static_cast<size_t>(src_len.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = std::max(src_len.idata()[i], tgt_len.idata()[i]);
  return out;
}

PaddedBatch gather_batch(const Rows& seqs, const Tensor& lengths, std::span<const int64_t> index) {
  if (seqs.shape().size() != 2 || seqs.dtype() != DType::i32)
    throw ShapeError("gather_batch: seqs [N, L] int32 has shape " + to_string(seqs.shape()));
  const int64_t n = seqs.size(), width = seqs.dim(1);
  check_tensor(lengths, {n}, "gather_batch: lengths [N]", DType::i32);
  const int32_t* len = lengths.idata();
  int64_t lmax = 0;
  for (const int64_t i : index) {
    if (i < 0 || i >= n)
      throw DataError("gather_batch: index " + std::to_string(i) + " is outside [0, " + std::to_string(n) + ")");
    if (len[i] < 0 || len[i] > width)
      throw DataError("gather_batch: example " + std::to_string(i) + " has length " + std::to_string(len[i]) +
                      ", outside [0, " + std::to_string(width) + "]");
    lmax = std::max<int64_t>(lmax, len[i]);
  }
  const int64_t b = static_cast<int64_t>(index.size());
  const Tensor rows = seqs.gather(index);   // [B, width]
  PaddedBatch out{Tensor({b, lmax}, DType::i32), Tensor({b}, DType::i32)};
  for (int64_t r = 0; r < b; ++r) {
    const int32_t l = len[index[static_cast<size_t>(r)]];
    std::copy_n(rows.idata() + r * width, l, out.tokens.idata() + r * lmax);
    out.lengths.idata()[r] = l;
  }
  return out;
}

PaddedBatch pad_sequences(const std::vector<std::vector<int32_t>>& seqs, int64_t min_len) {
  int64_t lmax = std::max<int64_t>(min_len, 0);
  for (const auto& s : seqs) lmax = std::max<int64_t>(lmax, static_cast<int64_t>(s.size()));
  const int64_t n = static_cast<int64_t>(seqs.size());
  PaddedBatch out{Tensor({n, lmax}, DType::i32), Tensor({n}, DType::i32)};
  for (int64_t r = 0; r < n; ++r) {
    const auto& s = seqs[static_cast<size_t>(r)];
    std::copy(s.begin(), s.end(), out.tokens.idata() + r * lmax);
    out.lengths.idata()[r] = static_cast<int32_t>(s.size());
  }
  return out;
}

}  // namespace attn::data

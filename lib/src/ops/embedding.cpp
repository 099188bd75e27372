// Embedding gather (forward) and scatter-add (backward). The backward splits the embedding
// width E across threads: each thread walks every position in order and adds its own slice
// of columns, so rows hit by repeated ids never race and the sums are reproducible.
#include "attn/ops/embedding.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "strided_loop.hpp"

namespace attn::ops {
namespace {

// "[1, 3]": the multi-index of flat position i in shape.
std::string position(int64_t i, const Shape& shape) {
  Shape idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    if (shape[d]) i /= shape[d];
  }
  return to_string(idx);
}

void check_ids(const Tensor& ids, int64_t V) {
  const int32_t* p = ids.idata();
  const int64_t n = ids.numel();
  // One cheap pass to detect; the (rare) message is built outside the loop.
  int64_t bad = -1;
  for (int64_t i = 0; i < n; ++i)
    if (p[i] < 0 || p[i] >= V) { bad = i; break; }
  if (bad >= 0)
    throw DataError("embedding: id " + std::to_string(p[bad]) + " at position " +
                    position(bad, ids.shape()) + " of ids " + to_string(ids.shape()) +
                    " is out of range [0, V = " + std::to_string(V) + ")");
}

}  // namespace

Tensor embedding_forward(const Tensor& ids, const Tensor& table, EmbeddingCache* cache,
                         int32_t padding_id) {
  check_tensor(ids, ids.shape(), "embedding: ids [...]", DType::i32);
  check_tensor(table, {kAny, kAny}, "embedding: table [V, E]");
  const int64_t V = table.dim(0), E = table.dim(1), n = ids.numel();
  if (padding_id != kNoPadding && (padding_id < 0 || padding_id >= V))
    throw ConfigError("embedding: padding id " + std::to_string(padding_id) +
                      " is out of range [0, V = " + std::to_string(V) + ") (use kNoPadding = -1 for none)");
  check_ids(ids, V);

  Shape y_shape = ids.shape();
  y_shape.push_back(E);
  Tensor y = Tensor::uninitialized(y_shape);   // every row copied
  const int32_t* pid = ids.idata();
  const float* pt = table.data();
  float* py = y.data();
#pragma omp parallel for schedule(static) if (n * E >= detail::kParallelElems)
  for (int64_t i = 0; i < n; ++i) std::memcpy(py + i * E, pt + pid[i] * E, E * sizeof(float));
  if (cache) *cache = {ids, padding_id};
  return y;
}

void embedding_backward(const Tensor& dy, const EmbeddingCache& cache, Tensor& dtable) {
  const Tensor& ids = cache.ids;
  check_tensor(ids, ids.shape(), "embedding_backward: cached ids [...]", DType::i32);
  check_tensor(dtable, {kAny, kAny}, "embedding_backward: dtable [V, E]");
  const int64_t V = dtable.dim(0), E = dtable.dim(1), n = ids.numel();
  Shape dy_shape = ids.shape();
  dy_shape.push_back(E);
  check_tensor(dy, dy_shape, "embedding_backward: dy [..., E]");
  check_ids(ids, V);   // ids may have been changed in place since the forward

  const int32_t* pid = ids.idata();
  const float* pd = dy.data();
  float* pt = dtable.data();
  const int32_t pad = cache.padding_id;
  // Column blocks of 64 floats (one 256-byte span) per task; a narrow table stays serial.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (E + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n * E >= detail::kParallelElems && blocks > 1)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t begin = blk * kBlock, w = std::min(kBlock, E - begin);
    for (int64_t i = 0; i < n; ++i) {
      if (pid[i] == pad) continue;
      const float* src = pd + i * E + begin;
      float* dst = pt + pid[i] * E + begin;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) dst[j] += src[j];
    }
  }
}

}  // namespace attn::ops

// Running a split in batches and reassembling per-example outputs (split_run.hpp).
#include "attn/train/split_run.hpp"

#include <algorithm>
#include <cstring>

#include "attn/core/error.hpp"
#include "attn/core/thread_governor.hpp"
#include "attn/data/batching.hpp"

namespace attn::train {
namespace {

// Copies part [B, d1..dk] into rows `index` of out [N, e1..ek] (every di <= ei), the rest of
// each out row left as it is (zero). A part of rank 1 is [B] into [N].
void scatter(const Tensor& part, std::span<const int64_t> index, Tensor& out) {
  const int rank = part.rank();
  if (rank == 1) {
    for (size_t b = 0; b < index.size(); ++b) out.data()[index[b]] = part.data()[b];
    return;
  }
  const int64_t last = part.dim(-1), out_last = out.dim(-1);
  const int64_t rows = part.numel() / (part.dim(0) * std::max<int64_t>(last, 1));   // rows of `last` per example
  std::vector<int64_t> at(static_cast<size_t>(rank), 0);   // index tuple over axes 1..rank-2
  for (size_t b = 0; b < index.size(); ++b) {
    const float* src = part.data() + static_cast<int64_t>(b) * rows * last;
    std::fill(at.begin(), at.end(), 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t dst = index[b];   // flat row index into out, axis by axis
      for (int a = 1; a < rank - 1; ++a) dst = dst * out.dim(a) + at[static_cast<size_t>(a)];
      std::memcpy(out.data() + dst * out_last, src + r * last, static_cast<size_t>(last) * sizeof(float));
      for (int a = rank - 2; a >= 1; --a) {   // the next row's index tuple
        if (++at[static_cast<size_t>(a)] < part.dim(a)) break;
        at[static_cast<size_t>(a)] = 0;
      }
    }
  }
}

}  // namespace

void require_examples(int64_t count, const std::string& file, const std::string& split) {
  if (count <= 0)
    throw DataError(file + ": split '/" + split + "' holds no examples; there is nothing to evaluate");
}

std::vector<std::vector<int64_t>> split_batches(std::span<const int32_t> lengths, int64_t max_tokens,
                                                int64_t batch_size) {
  if (batch_size <= 0)
    return data::make_batches(lengths, {.max_tokens = max_tokens, .max_batch = 0, .shuffle = false, .seed = 0}, 0);
  std::vector<std::vector<int64_t>> batches;
  const auto n = static_cast<int64_t>(lengths.size());
  for (int64_t i = 0; i < n; i += batch_size) {
    batches.emplace_back();
    for (int64_t j = i; j < std::min(i + batch_size, n); ++j) batches.back().push_back(j);
  }
  return batches;
}

NamedTensors run_split(int64_t n, const std::vector<std::vector<int64_t>>& batches,
                       const std::function<NamedTensors(std::span<const int64_t> index)>& run) {
  struct Part {
    std::span<const int64_t> index;
    Tensor values;
  };
  std::vector<std::pair<std::string, std::vector<Part>>> parts;   // per name, in first-seen order
  for (const auto& index : batches) {
    adapt_threads();
    for (auto& named : run(index)) {
      const std::string& name = named.first;   // not a structured binding: clang 14 cannot capture one
      Tensor& t = named.second;
      check_tensor(t, t.shape(), "run_split: output '" + name + "'");   // float32
      if (t.rank() < 1 || t.dim(0) != static_cast<int64_t>(index.size()))
        throw ShapeError("run_split: output '" + name + "' has shape " + to_string(t.shape()) + ", expected [" +
                         std::to_string(index.size()) + ", ...] (one row per example of the batch)");
      auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == name; });
      if (it == parts.end()) it = parts.insert(parts.end(), {name, {}});
      if (!it->second.empty() && it->second.front().values.rank() != t.rank())
        throw ShapeError("run_split: output '" + name + "' changes rank between batches");
      it->second.push_back({index, std::move(t)});
    }
  }
  NamedTensors out;
  for (const auto& [name, list] : parts) {
    Shape shape = list.front().values.shape();
    shape[0] = n;
    for (size_t d = 1; d < shape.size(); ++d) {   // at least 1, so that an empty batch output stays storable
      shape[d] = 1;
      for (const Part& p : list) shape[d] = std::max(shape[d], p.values.dim(static_cast<int>(d)));
    }
    Tensor all(shape);
    for (const Part& p : list) scatter(p.values, p.index, all);
    out.emplace_back(name, std::move(all));
  }
  return out;
}

}  // namespace attn::train

// Running a split in batches and reassembling per-example outputs (split_run.hpp).
#include "attn/train/split_run.hpp"

#include <algorithm>
#include <cstring>

#include "attn/core/error.hpp"
#include "attn/core/thread_governor.hpp"
#include "attn/data/batching.hpp"
#include "attn/dist/world.hpp"

namespace attn::train {
namespace {

// A tensor's elements as bytes (float32 and int32 are both 4 bytes wide).
const std::byte* raw(const Tensor& t) {
  return reinterpret_cast<const std::byte*>(t.dtype() == DType::i32 ? static_cast<const void*>(t.idata())
                                                                    : static_cast<const void*>(t.data()));
}
std::byte* raw(Tensor& t) {
  return reinterpret_cast<std::byte*>(t.dtype() == DType::i32 ? static_cast<void*>(t.idata()) : static_cast<void*>(t.data()));
}

// Copies part [B, d1..dk] into rows `index` of out [N, e1..ek] (every di <= ei), the rest of
// each out row left as it is (zero). A part of rank 1 is [B] into [N].
void scatter(const Tensor& part, std::span<const int64_t> index, Tensor& out) {
  const int rank = part.rank();
  const std::byte* from = raw(part);
  std::byte* to = raw(out);
  if (rank == 1) {
    for (size_t b = 0; b < index.size(); ++b) std::memcpy(to + index[b] * 4, from + b * 4, 4);
    return;
  }
  const int64_t last = part.dim(-1), out_last = out.dim(-1);
  const int64_t rows = part.numel() / (part.dim(0) * std::max<int64_t>(last, 1));   // rows of `last` per example
  std::vector<int64_t> at(static_cast<size_t>(rank), 0);   // index tuple over axes 1..rank-2
  for (size_t b = 0; b < index.size(); ++b) {
    const std::byte* src = from + static_cast<int64_t>(b) * rows * last * 4;
    std::fill(at.begin(), at.end(), 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t dst = index[b];   // flat row index into out, axis by axis
      for (int a = 1; a < rank - 1; ++a) dst = dst * out.dim(a) + at[static_cast<size_t>(a)];
      std::memcpy(to + dst * out_last * 4, src + r * last * 4, static_cast<size_t>(last) * 4);
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

namespace {

// ---- a rank's batches as bytes, for dist::allgather ------------------------------------------

void put(std::vector<std::byte>& out, const void* p, size_t n) {
  if (n == 0) return;
  const auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}
template <class T>
void put(std::vector<std::byte>& out, T v) {
  put(out, &v, sizeof v);
}

struct Reader {
  std::span<const std::byte> bytes;
  size_t at = 0;
  void get(void* p, size_t n) {
    if (at + n > bytes.size()) throw Error("run_split: a rank's batches arrived cut short");
    if (n == 0) return;   // p may be null then (an empty vector's data)
    std::memcpy(p, bytes.data() + at, n);
    at += n;
  }
  template <class T>
  T get() {
    T v;
    get(&v, sizeof v);
    return v;
  }
};

void encode(const BatchOutput& b, std::vector<std::byte>& out) {
  put<uint64_t>(out, b.sums.size());
  put(out, b.sums.data(), b.sums.size() * sizeof(double));
  put<uint64_t>(out, b.tensors.size());
  for (const auto& [name, t] : b.tensors) {
    put<uint64_t>(out, name.size());
    put(out, name.data(), name.size());
    put<int32_t>(out, t.dtype() == DType::i32 ? 1 : 0);
    put<int32_t>(out, t.rank());
    for (int d = 0; d < t.rank(); ++d) put<int64_t>(out, t.dim(d));
    put(out, raw(t), static_cast<size_t>(t.numel()) * 4);
  }
}

BatchOutput decode(Reader& in) {
  BatchOutput b;
  b.sums.resize(in.get<uint64_t>());
  in.get(b.sums.data(), b.sums.size() * sizeof(double));
  const auto count = in.get<uint64_t>();
  for (uint64_t k = 0; k < count; ++k) {
    std::string name(in.get<uint64_t>(), '\0');
    in.get(name.data(), name.size());
    const DType dtype = in.get<int32_t>() == 1 ? DType::i32 : DType::f32;
    Shape shape(static_cast<size_t>(in.get<int32_t>()));
    for (int64_t& d : shape) d = in.get<int64_t>();
    Tensor t(shape, dtype);
    in.get(raw(t), static_cast<size_t>(t.numel()) * 4);
    b.tensors.emplace_back(std::move(name), std::move(t));
  }
  return b;
}

// Every batch's output on every rank: this rank's own, the others' through an all-gather of
// byte blocks padded to the largest rank's.
std::vector<BatchOutput> gather(std::vector<BatchOutput> own, size_t batches, dist::Communicator& comm) {
  const int N = comm.size(), r = comm.rank();
  std::vector<BatchOutput> all(batches);
  if (N == 1) {
    for (size_t b = 0; b < batches; ++b) all[b] = std::move(own[b]);
    return all;
  }
  std::vector<std::byte> mine;
  for (const BatchOutput& b : own) encode(b, mine);
  const double size = static_cast<double>(mine.size());
  const std::vector<double> sizes = dist::allgather(comm, std::span<const double>(&size, 1));
  const auto widest = static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end()));
  mine.resize(widest);
  const std::vector<std::byte> blocks = dist::allgather(comm, mine);
  for (int q = 0; q < N; ++q) {
    Reader in{std::span<const std::byte>(blocks.data() + static_cast<size_t>(q) * widest, widest)};
    for (size_t b = static_cast<size_t>(q); b < batches; b += static_cast<size_t>(N))
      all[b] = q == r ? std::move(own[b / static_cast<size_t>(N)]) : decode(in);
  }
  return all;
}

}  // namespace

const Tensor& SplitOutput::at(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  throw ConfigError("run_split: no batch gave an output named '" + name + "'");
}

void add_token_lists(BatchOutput& out, const std::vector<std::vector<int32_t>>& tokens, const std::vector<float>& scores) {
  const data::PaddedBatch padded = data::pad_sequences(tokens, /*min_len=*/1);
  out.tensors.emplace_back("tokens", padded.tokens);
  out.tensors.emplace_back("lengths", padded.lengths);
  out.tensors.emplace_back("scores", Tensor::from({static_cast<int64_t>(scores.size())}, scores));
}

void read_token_lists(const SplitOutput& all, int64_t n, std::vector<std::vector<int32_t>>& tokens,
                      std::vector<float>& scores) {
  const Tensor &padded = all.at("tokens"), &lengths = all.at("lengths"), &s = all.at("scores");
  for (int64_t i = 0; i < n; ++i) {
    const int32_t* row = padded.idata() + i * padded.dim(1);
    tokens.emplace_back(row, row + lengths.idata()[i]);
    scores.push_back(s.data()[i]);
  }
}

SplitOutput run_split(int64_t n, const std::vector<std::vector<int64_t>>& batches,
                      const std::function<BatchOutput(std::span<const int64_t> index)>& run) {
  return run_split(n, batches, run, dist::world());
}

SplitOutput run_split(int64_t n, const std::vector<std::vector<int64_t>>& batches,
                      const std::function<BatchOutput(std::span<const int64_t> index)>& run, dist::Communicator& comm) {
  const auto N = static_cast<size_t>(comm.size()), r = static_cast<size_t>(comm.rank());
  std::vector<BatchOutput> own;
  for (size_t b = r; b < batches.size(); b += N) {
    adapt_threads();
    own.push_back(run(batches[b]));
    for (auto& named : own.back().tensors) {
      const std::string& name = named.first;   // not a structured binding: clang 14 cannot capture one
      const Tensor& t = named.second;
      if (t.rank() < 1 || t.dim(0) != static_cast<int64_t>(batches[b].size()))
        throw ShapeError("run_split: output '" + name + "' has shape " + to_string(t.shape()) + ", expected [" +
                         std::to_string(batches[b].size()) + ", ...] (one row per example of the batch)");
    }
  }
  const std::vector<BatchOutput> all = gather(std::move(own), batches.size(), comm);

  struct Part {
    std::span<const int64_t> index;
    const Tensor* values;
  };
  std::vector<std::pair<std::string, std::vector<Part>>> parts;   // per name, in first-seen order
  SplitOutput out;
  for (size_t b = 0; b < all.size(); ++b) {
    const std::vector<double>& sums = all[b].sums;
    if (out.sums.size() < sums.size()) out.sums.resize(sums.size(), 0.0);
    for (size_t k = 0; k < sums.size(); ++k) out.sums[k] += sums[k];
    for (const auto& [name, t] : all[b].tensors) {
      const std::string& key = name;   // clang 14 does not capture structured bindings
      auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == key; });
      if (it == parts.end()) it = parts.insert(parts.end(), {name, {}});
      if (!it->second.empty() &&
          (it->second.front().values->rank() != t.rank() || it->second.front().values->dtype() != t.dtype()))
        throw ShapeError("run_split: output '" + name + "' changes rank or type between batches");
      it->second.push_back({batches[b], &t});
    }
  }
  for (const auto& [name, list] : parts) {
    Shape shape = list.front().values->shape();
    shape[0] = n;
    for (size_t d = 1; d < shape.size(); ++d) {   // at least 1, so that an empty batch output stays storable
      shape[d] = 1;
      for (const Part& p : list) shape[d] = std::max(shape[d], p.values->dim(static_cast<int>(d)));
    }
    Tensor whole(shape, list.front().values->dtype());
    for (const Part& p : list) scatter(*p.values, p.index, whole);
    out.tensors.emplace_back(name, std::move(whole));
  }
  return out;
}

}  // namespace attn::train

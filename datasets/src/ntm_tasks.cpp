// The NTM tasks: one drawing function per task writes one example into its rows; a shared
// driver allocates the split and applies the disjoint-split policy.
#include "attn/datasets/ntm_tasks.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {
namespace {

struct Dims {
  int64_t tin, win, tout, wout;
};
struct Lengths {
  int64_t in, out;
};

// Allocates an n-example split of `dims` and fills it through draw(rng, in, out) -> Lengths,
// where `in` [Tin, I] and `out` [Tout, O] arrive zeroed.
template <class Draw>
SequenceSplit draw_sequences(const std::string& task, const char* split, int64_t n, const Dims& d,
                             Rng& rng, const KeySet& earlier, KeySet& drawn, Draw&& draw) {
  Tensor inputs({n, d.tin, d.win}), targets({n, d.tout, d.wout});
  SequenceSplit s{{}, Tensor({n}, DType::i32), {}, Tensor({n}, DType::i32)};
  const int64_t in_size = d.tin * d.win, out_size = d.tout * d.wout;
  draw_disjoint(task, split, n, rng, earlier, drawn, [&](Rng& r, int64_t i) {
    float* in = inputs.data() + i * in_size;
    float* out = targets.data() + i * out_size;
    std::fill(in, in + in_size, 0.0f);
    std::fill(out, out + out_size, 0.0f);
    const Lengths len = draw(r, in, out);
    s.input_len.idata()[i] = static_cast<int32_t>(len.in);
    s.target_len.idata()[i] = static_cast<int32_t>(len.out);
    return hash_bytes(in, static_cast<size_t>(len.in * d.win) * sizeof(float), static_cast<uint64_t>(len.in));
  });
  s.inputs = inputs;
  s.targets = targets;
  return s;
}

int64_t uniform_between(Rng& rng, int64_t lo, int64_t hi) { return lo + rng.uniform_int(hi - lo + 1); }

// rows x width random bits into the first `width` channels of rows of `stride` floats.
void fill_bits(Rng& rng, float* dst, int64_t rows, int64_t width, int64_t stride) {
  for (int64_t t = 0; t < rows; ++t) {
    uint32_t word = 0;
    for (int64_t j = 0; j < width; ++j) {
      if (j % 32 == 0) word = rng.next_u32();
      dst[t * stride + j] = static_cast<float>((word >> (j % 32)) & 1u);
    }
  }
}

// Copies `rows` rows of `width` channels between row layouts of different strides.
void copy_rows(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows,
               int64_t width) {
  for (int64_t t = 0; t < rows; ++t) std::copy_n(src + t * src_stride, width, dst + t * dst_stride);
}

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

void check_lengths(const std::string& task, int64_t width, int64_t min_len, int64_t max_len) {
  require(width >= 1, task + ": width must be >= 1, got " + std::to_string(width));
  require(min_len >= 1, task + ": min_len must be >= 1, got " + std::to_string(min_len));
  require(max_len >= min_len, task + ": max_len (" + std::to_string(max_len) +
                                  ") must be >= min_len (" + std::to_string(min_len) + ")");
}

}  // namespace

float repeat_count_code(int64_t count, int64_t norm_repeat) {
  // Mean and standard deviation of the discrete uniform distribution on 1..R.
  const double r = static_cast<double>(norm_repeat);
  const double mu = (r + 1) / 2, sigma = std::sqrt((r * r - 1) / 12);
  return static_cast<float>((static_cast<double>(count) - mu) / sigma);
}

Splits<SequenceSplit> make_copy(const CopyConfig& cfg, const SplitSizes& sizes, uint64_t seed) {
  const std::string task = "copy";
  check_sizes(task, sizes);
  check_lengths(task, cfg.width, cfg.min_len, cfg.max_len);
  const int64_t W = cfg.width;
  const Dims d{cfg.max_len + 1, W + 1, cfg.max_len, W};
  return draw_splits<SequenceSplit>(sizes, seed, [&](int64_t n, Rng& rng, const KeySet& earlier, KeySet& drawn,
                                                     const char* split) {
    return draw_sequences(task, split, n, d, rng, earlier, drawn, [&](Rng& r, float* in, float* out) {
      const int64_t L = uniform_between(r, cfg.min_len, cfg.max_len);
      fill_bits(r, in, L, W, d.win);
      in[L * d.win + W] = 1.0f;   // delimiter
      copy_rows(in, d.win, out, d.wout, L, W);
      return Lengths{L + 1, L};
    });
  });
}

Splits<SequenceSplit> make_repeat_copy(const RepeatCopyConfig& cfg, const SplitSizes& sizes, uint64_t seed) {
  const std::string task = "repeat-copy";
  check_sizes(task, sizes);
  check_lengths(task, cfg.width, cfg.min_len, cfg.max_len);
  require(cfg.min_repeat >= 1, task + ": min_repeat must be >= 1, got " + std::to_string(cfg.min_repeat));
  require(cfg.max_repeat >= cfg.min_repeat, task + ": max_repeat (" + std::to_string(cfg.max_repeat) +
                                                ") must be >= min_repeat (" + std::to_string(cfg.min_repeat) + ")");
  require(cfg.norm_repeat >= 2, task + ": norm_repeat must be >= 2, got " + std::to_string(cfg.norm_repeat));
  const int64_t W = cfg.width;
  const Dims d{cfg.max_len + 1, W + 2, cfg.max_len * cfg.max_repeat + 1, W + 1};
  return draw_splits<SequenceSplit>(sizes, seed, [&](int64_t n, Rng& rng, const KeySet& earlier, KeySet& drawn,
                                                     const char* split) {
    return draw_sequences(task, split, n, d, rng, earlier, drawn, [&](Rng& r, float* in, float* out) {
      const int64_t L = uniform_between(r, cfg.min_len, cfg.max_len);
      const int64_t c = uniform_between(r, cfg.min_repeat, cfg.max_repeat);
      fill_bits(r, in, L, W, d.win);
      in[L * d.win + W] = 1.0f;                                          // delimiter
      in[L * d.win + W + 1] = repeat_count_code(c, cfg.norm_repeat);     // repeat count
      for (int64_t k = 0; k < c; ++k) copy_rows(in, d.win, out + k * L * d.wout, d.wout, L, W);
      out[c * L * d.wout + W] = 1.0f;                                    // end marker
      return Lengths{L + 1, c * L + 1};
    });
  });
}

Splits<SequenceSplit> make_assoc_recall(const AssocRecallConfig& cfg, const SplitSizes& sizes, uint64_t seed) {
  const std::string task = "assoc-recall";
  check_sizes(task, sizes);
  require(cfg.width >= 1, task + ": width must be >= 1, got " + std::to_string(cfg.width));
  require(cfg.item_len >= 1, task + ": item_len must be >= 1, got " + std::to_string(cfg.item_len));
  require(cfg.min_items >= 2, task + ": min_items must be >= 2 (the query needs a next item), got " +
                                  std::to_string(cfg.min_items));
  require(cfg.max_items >= cfg.min_items, task + ": max_items (" + std::to_string(cfg.max_items) +
                                              ") must be >= min_items (" + std::to_string(cfg.min_items) + ")");
  const int64_t bits = cfg.width * cfg.item_len;
  require(bits >= 62 || (int64_t{1} << bits) >= cfg.max_items,
          task + ": items of width * item_len = " + std::to_string(bits) + " bits cannot make " +
              std::to_string(cfg.max_items) + " distinct items");
  const int64_t W = cfg.width, IL = cfg.item_len;
  const Dims d{cfg.max_items * (IL + 1) + IL + 2, W + 2, IL, W};
  return draw_splits<SequenceSplit>(sizes, seed, [&](int64_t n, Rng& rng, const KeySet& earlier, KeySet& drawn,
                                                     const char* split) {
    std::vector<float> items(static_cast<size_t>(cfg.max_items * IL * W));   // item k at k * IL * W
    return draw_sequences(task, split, n, d, rng, earlier, drawn, [&](Rng& r, float* in, float* out) {
      const int64_t k = uniform_between(r, cfg.min_items, cfg.max_items);
      const int64_t item_size = IL * W;
      for (int64_t a = 0; a < k; ++a) {
        float* item = items.data() + a * item_size;
        bool repeated = true;
        while (repeated) {   // items are distinct, so the query has one answer
          fill_bits(r, item, IL, W, W);
          repeated = false;
          for (int64_t b = 0; b < a && !repeated; ++b)
            repeated = std::equal(item, item + item_size, items.data() + b * item_size);
        }
      }
      int64_t row = 0;
      for (int64_t a = 0; a < k; ++a) {
        in[row++ * d.win + W] = 1.0f;                                    // item delimiter
        copy_rows(items.data() + a * item_size, W, in + row * d.win, d.win, IL, W);
        row += IL;
      }
      const int64_t q = r.uniform_int(k - 1);
      in[row++ * d.win + W + 1] = 1.0f;                                  // query delimiter
      copy_rows(items.data() + q * item_size, W, in + row * d.win, d.win, IL, W);
      row += IL;
      in[row++ * d.win + W + 1] = 1.0f;                                  // query delimiter
      copy_rows(items.data() + (q + 1) * item_size, W, out, d.wout, IL, W);
      return Lengths{row, IL};
    });
  });
}

Splits<SequenceSplit> make_priority_sort(const PrioritySortConfig& cfg, const SplitSizes& sizes, uint64_t seed) {
  const std::string task = "priority-sort";
  check_sizes(task, sizes);
  require(cfg.width >= 1, task + ": width must be >= 1, got " + std::to_string(cfg.width));
  require(cfg.in_n >= 1, task + ": in_n must be >= 1, got " + std::to_string(cfg.in_n));
  require(cfg.out_n >= 1 && cfg.out_n <= cfg.in_n, task + ": out_n must be in [1, in_n = " +
                                                       std::to_string(cfg.in_n) + "], got " +
                                                       std::to_string(cfg.out_n));
  const int64_t W = cfg.width;
  const Dims d{cfg.in_n + 1, W + 2, cfg.out_n, W};
  return draw_splits<SequenceSplit>(sizes, seed, [&](int64_t n, Rng& rng, const KeySet& earlier, KeySet& drawn,
                                                     const char* split) {
    std::vector<int64_t> order(static_cast<size_t>(cfg.in_n));
    return draw_sequences(task, split, n, d, rng, earlier, drawn, [&](Rng& r, float* in, float* out) {
      fill_bits(r, in, cfg.in_n, W, d.win);
      for (int64_t t = 0; t < cfg.in_n; ++t) in[t * d.win + W] = r.uniform(-1.0f, 1.0f);   // priority
      in[cfg.in_n * d.win + W + 1] = 1.0f;                                                   // delimiter
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return in[a * d.win + W] > in[b * d.win + W]; });
      for (int64_t t = 0; t < cfg.out_n; ++t) std::copy_n(in + order[t] * d.win, W, out + t * d.wout);
      return Lengths{cfg.in_n + 1, cfg.out_n};
    });
  });
}

void write_splits(io::File& file, const Splits<SequenceSplit>& splits) {
  for (int k = 0; k < 3; ++k) data::write_sequence_split(file, kSplitNames[k], splits[k]);
}

}  // namespace attn::datasets

// Positional encodings for Transformers: the fixed sinusoids of Vaswani et al. 2017 (sec. 3.5)
// and a learned table of position embeddings (Gehring et al. 2017), both added to the token
// embeddings x [B, T, D] at positions offset .. offset + T - 1 (offset > 0 when decoding with a
// KV cache, one position at a time).
#pragma once
#include <cstdint>
#include <string>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/param.hpp"

namespace attn::nn {

// PE[pos, 2i] = sin(pos / 10000^(2i/D)),  PE[pos, 2i+1] = cos(pos / 10000^(2i/D)).
// Returns [positions, d_model] (computed in double, then rounded). An odd D ends on a sine.
Tensor sinusoidal_encoding(int64_t positions, int64_t d_model);
// One entry PE(pos, column) of that table, in double precision.
double sinusoidal_value(int64_t pos, int64_t column, int64_t d_model);

// In place: x[b, t] += table[offset + t].   x: [B, T, D]   table: [max_len, D] with
// offset + T <= max_len.
void add_positional_encoding(Tensor& x, const Tensor& table, int64_t offset = 0);

// A learned embedding per position, "<name>/table" [max_len, D], initialised N(0, 0.02^2).
class LearnedPositionalEmbedding {
 public:
  LearnedPositionalEmbedding(int64_t max_len, int64_t d_model, const std::string& name, Rng& rng);

  int64_t max_len() const { return table.value.dim(0); }
  ParamList params() { return {&table}; }

  // x: [B, T, D] -> x + table[offset : offset + T] (new tensor).
  Tensor forward(const Tensor& x, int64_t offset = 0) const;
  // dy: [B, T, D]. Adds sum_b dy[b, t] into table.grad[offset + t]. The input gradient is dy
  // itself (the layer is an addition), so it is not copied: the caller passes dy on.
  void backward(const Tensor& dy, int64_t offset = 0);

  Param table;
};

}  // namespace attn::nn

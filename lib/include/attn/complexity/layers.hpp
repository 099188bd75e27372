// The layer types that Vaswani et al. (2017, Table 1) compare, built on the library's real ops
// behind one small interface, so attn-complexity can count, time and probe them alike.
//
// Every layer maps a sequence of n positions of width d to another (same n, same d) in its own
// native layout; `Layout` says where position t's values live, so the probes need no transposes:
//   self_attention        ops::attention_forward, q = k = v = x, one head      x: [1, 1, n, d]
//   restricted_attention  the same under AttentionMask::window_mask(r)        x: [1, 1, n, d]
//   multi_head_attention  nn::MultiHeadAttention (Q/K/V/O projections + core)  x: [1, n, d]
//   lstm, gru             ops::lstm_layer_*, ops::gru_layer_*, hidden = d      x: [n, 1, d]
//   conv                  ops::conv1d, kernel k, causal (k-1 zeros on the left) x: [1, d, n]
//   dilated_conv          the same with dilation k^depth (WaveNet, van den Oord et al. 2016)
// The convolutions are causal so that the reach of a stack is the textbook one: k-1 positions
// per contiguous layer, k^L - 1 after L dilated layers.
//
// The attention layers always take the streaming core (its memory grows as n, and one path
// keeps the FLOP counts one closed form); the restricted layer tiles queries and keys by r
// rows, so each query tile visits at most 3 key tiles and its cost is O(r n d) from n = 3r on.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"

namespace attn::complexity {

enum class LayerKind : uint8_t {
  self_attention,
  restricted_attention,
  multi_head_attention,
  lstm,
  gru,
  conv,
  dilated_conv,
};
inline constexpr std::array<LayerKind, 7> kAllLayers = {
    LayerKind::self_attention, LayerKind::restricted_attention, LayerKind::multi_head_attention,
    LayerKind::lstm,           LayerKind::gru,                  LayerKind::conv,
    LayerKind::dilated_conv};

const char* layer_name(LayerKind kind);    // "self_attention": HDF5 and command-line names
const char* layer_title(LayerKind kind);   // "self-attention": the table's names
// Inverse of layer_name; throws ConfigError listing the valid names.
LayerKind parse_layer(const std::string& name);

struct LayerShape {
  int64_t n = 0;         // sequence length, >= 1
  int64_t d = 0;         // representation width, >= 1
  int64_t k = 3;         // convolution kernel width, >= 2
  int64_t r = 16;        // restricted attention: window radius (keys |i - j| <= r), >= 1
  int64_t heads = 8;     // multi-head attention: heads (d % heads == 0 required)
  int64_t depth = 0;     // place in a stack: dilated_conv uses dilation k^depth
  int64_t block_q = 0;   // attention query tile rows; 0 = the layer's default (see above)
};
// Throws ConfigError naming the first bad field for `kind`.
void check_layer_shape(LayerKind kind, const LayerShape& shape);

// Where a layer's activations keep position t, channel c: data()[t * position_stride +
// c * channel_stride], in a tensor of `shape` holding n positions of d channels.
struct Layout {
  Shape shape;
  int64_t position_stride = 0;
  int64_t channel_stride = 0;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual Layout layout() const = 0;
  // y = layer(x): x and y are shaped layout().shape. `train` keeps what backward needs.
  virtual Tensor forward(const Tensor& x, bool train) = 0;
  // Backward of the last training forward: returns dx (fresh) and adds into the layer's own
  // parameter gradients.
  virtual Tensor backward(const Tensor& dy) = 0;
  // Bytes the last training forward holds: every tensor kept for backward plus the output,
  // storage shared between them counted once. Exact sizes, not a process-memory reading.
  virtual int64_t activation_bytes() const = 0;
};

// A layer of `kind` with random weights (Glorot uniform, zero biases) drawn from `rng`.
std::unique_ptr<Layer> make_layer(LayerKind kind, const LayerShape& shape, Rng& rng);

}  // namespace attn::complexity

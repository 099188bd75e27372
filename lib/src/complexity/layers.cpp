// The seven probe layers of attn-complexity: thin adapters from one interface onto the real
// ops (attention core, multi-head attention, LSTM/GRU layers, conv1d). They own their weights
// and the last training cache, and nothing else.
#include "attn/complexity/layers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/nn/init.hpp"
#include "attn/nn/multi_head_attention.hpp"
#include "attn/ops/attention_core.hpp"
#include "attn/ops/conv.hpp"
#include "attn/ops/gru_cell.hpp"
#include "attn/ops/lstm_cell.hpp"

namespace attn::complexity {
namespace {

struct KindInfo {
  LayerKind kind;
  const char* name;
  const char* title;
};
constexpr std::array<KindInfo, 7> kKinds = {{
    {LayerKind::self_attention, "self_attention", "self-attention"},
    {LayerKind::restricted_attention, "restricted_attention", "restricted self-attention"},
    {LayerKind::multi_head_attention, "multi_head_attention", "multi-head attention layer"},
    {LayerKind::lstm, "lstm", "recurrent (LSTM)"},
    {LayerKind::gru, "gru", "recurrent (GRU)"},
    {LayerKind::conv, "conv", "convolutional"},
    {LayerKind::dilated_conv, "dilated_conv", "convolutional (dilated)"},
}};

const KindInfo& info(LayerKind kind) {
  for (const KindInfo& k : kKinds)
    if (k.kind == kind) return k;
  throw Error("complexity: unknown layer kind " + std::to_string(static_cast<int>(kind)));
}

// Bytes of a set of tensors, each storage counted once (at the size of its largest view).
int64_t distinct_bytes(const std::vector<const Tensor*>& tensors) {
  std::vector<const Tensor*> seen;
  std::vector<int64_t> size;
  for (const Tensor* t : tensors) {
    if (t == nullptr || !t->defined() || t->empty()) continue;
    const int64_t bytes = t->numel() * 4;   // float32 and int32 alike
    auto it = std::find_if(seen.begin(), seen.end(), [&](const Tensor* s) { return s->shares_storage_with(*t); });
    if (it == seen.end()) {
      seen.push_back(t);
      size.push_back(bytes);
    } else {
      int64_t& s = size[it - seen.begin()];
      s = std::max(s, bytes);
    }
  }
  int64_t total = 0;
  for (int64_t s : size) total += s;
  return total;
}

// a += b, elementwise over equal sizes.
void add_into(Tensor& a, const Tensor& b) {
  float* pa = a.data();
  const float* pb = b.data();
  for (int64_t i = 0; i < a.numel(); ++i) pa[i] += pb[i];
}

// The attention core over one head, q = k = v = x; full or windowed.
class CoreAttention final : public Layer {
 public:
  CoreAttention(const LayerShape& s, bool restricted) : s_(s) {
    if (restricted) mask_ = ops::AttentionMask::window_mask(s.r);
    options_.path = ops::AttentionPath::streaming;
    if (restricted) options_.block_q = options_.block_k = s.r;
    if (s.block_q > 0) options_.block_q = s.block_q;
  }
  Layout layout() const override { return {{1, 1, s_.n, s_.d}, s_.d, 1}; }
  Tensor forward(const Tensor& x, bool train) override {
    const float scale = 1.0f / std::sqrt(static_cast<float>(s_.d));
    y_ = ops::attention_forward(x, x, x, scale, mask_, train ? &cache_ : nullptr, nullptr, options_);
    return y_;
  }
  Tensor backward(const Tensor& dy) override {
    ops::AttentionGrads g = ops::attention_backward(dy, cache_);
    add_into(g.dq, g.dk);   // x fed q, k and v: its gradient is the sum
    add_into(g.dq, g.dv);
    return g.dq;
  }
  int64_t activation_bytes() const override {
    return distinct_bytes({&cache_.q, &cache_.k, &cache_.v, &cache_.weights, &cache_.out, &cache_.lse, &y_});
  }

 private:
  LayerShape s_;
  ops::AttentionMask mask_;
  ops::AttentionOptions options_;
  ops::AttentionCache cache_;
  Tensor y_;
};

class MultiHead final : public Layer {
 public:
  MultiHead(const LayerShape& s, Rng& rng) : s_(s), mha_(s.d, s.heads, "mha", rng) {
    options_.path = ops::AttentionPath::streaming;
    if (s.block_q > 0) options_.block_q = s.block_q;
  }
  Layout layout() const override { return {{1, s_.n, s_.d}, s_.d, 1}; }
  Tensor forward(const Tensor& x, bool train) override {
    y_ = mha_.forward(x, x, x, ops::AttentionMask::none(), train ? &cache_ : nullptr, nullptr, options_);
    return y_;
  }
  Tensor backward(const Tensor& dy) override { return mha_.backward(dy, cache_).dquery; }
  int64_t activation_bytes() const override {
    const ops::AttentionCache& c = cache_.core;
    return distinct_bytes({&cache_.query, &cache_.key, &cache_.value, &c.q, &c.k, &c.v, &c.weights, &c.out,
                           &c.lse, &cache_.context, &y_});
  }

 private:
  LayerShape s_;
  nn::MultiHeadAttention mha_;
  ops::AttentionOptions options_;
  nn::MultiHeadAttentionCache cache_;
  Tensor y_;
};

class Lstm final : public Layer {
 public:
  Lstm(const LayerShape& s, Rng& rng)
      : s_(s),
        W_ih_(nn::glorot_uniform({4 * s.d, s.d}, rng)),
        W_hh_(nn::glorot_uniform({4 * s.d, s.d}, rng)),
        b_({4 * s.d}),
        dW_ih_(zeros_like(W_ih_)),
        dW_hh_(zeros_like(W_hh_)),
        db_(zeros_like(b_)),
        h0_({1, s.d}),
        c0_({1, s.d}) {}
  Layout layout() const override { return {{s_.n, 1, s_.d}, s_.d, 1}; }
  Tensor forward(const Tensor& x, bool train) override {
    y_ = ops::lstm_layer_forward(x, h0_, c0_, W_ih_, W_hh_, b_, train ? &cache_ : nullptr).y;
    return y_;
  }
  Tensor backward(const Tensor& dy) override {
    return ops::lstm_layer_backward(dy, Tensor(), Tensor(), W_ih_, W_hh_, cache_, dW_ih_, dW_hh_, db_).dx;
  }
  int64_t activation_bytes() const override {
    return distinct_bytes({&cache_.x, &cache_.hs, &cache_.cs, &cache_.gates, &y_});
  }

 private:
  LayerShape s_;
  Tensor W_ih_, W_hh_, b_, dW_ih_, dW_hh_, db_, h0_, c0_;
  ops::LstmLayerCache cache_;
  Tensor y_;
};

class Gru final : public Layer {
 public:
  Gru(const LayerShape& s, Rng& rng)
      : s_(s),
        W_ih_(nn::glorot_uniform({3 * s.d, s.d}, rng)),
        W_hh_(nn::glorot_uniform({3 * s.d, s.d}, rng)),
        b_ih_({3 * s.d}),
        b_hh_({3 * s.d}),
        dW_ih_(zeros_like(W_ih_)),
        dW_hh_(zeros_like(W_hh_)),
        db_ih_(zeros_like(b_ih_)),
        db_hh_(zeros_like(b_hh_)),
        h0_({1, s.d}) {}
  Layout layout() const override { return {{s_.n, 1, s_.d}, s_.d, 1}; }
  Tensor forward(const Tensor& x, bool train) override {
    y_ = ops::gru_layer_forward(x, h0_, W_ih_, W_hh_, b_ih_, b_hh_, train ? &cache_ : nullptr).y;
    return y_;
  }
  Tensor backward(const Tensor& dy) override {
    return ops::gru_layer_backward(dy, Tensor(), W_ih_, W_hh_, cache_, dW_ih_, dW_hh_, db_ih_, db_hh_).dx;
  }
  int64_t activation_bytes() const override {
    return distinct_bytes({&cache_.x, &cache_.hs, &cache_.gates, &cache_.hn, &y_});
  }

 private:
  LayerShape s_;
  Tensor W_ih_, W_hh_, b_ih_, b_hh_, dW_ih_, dW_hh_, db_ih_, db_hh_, h0_;
  ops::GruLayerCache cache_;
  Tensor y_;
};

// Causal conv1d: x is padded on the left by (k-1) * dilation zeros, so output t sees inputs
// t - (k-1) dilation, ..., t and the output keeps n positions.
class CausalConv final : public Layer {
 public:
  CausalConv(const LayerShape& s, int64_t dilation, Rng& rng)
      : s_(s),
        pad_((s.k - 1) * dilation),
        W_(nn::glorot_uniform({s.d, s.d, s.k}, rng)),
        b_({s.d}),
        dW_(zeros_like(W_)),
        db_(zeros_like(b_)) {
    options_.dilation = dilation;
  }
  Layout layout() const override { return {{1, s_.d, s_.n}, 1, s_.n}; }
  Tensor forward(const Tensor& x, bool train) override {
    const int64_t n = s_.n, L = n + pad_;
    Tensor xp({1, s_.d, L});
    for (int64_t c = 0; c < s_.d; ++c) std::memcpy(xp.data() + c * L + pad_, x.data() + c * n, n * sizeof(float));
    y_ = ops::conv1d_forward(xp, W_, b_, options_, train ? &cache_ : nullptr);
    return y_;
  }
  Tensor backward(const Tensor& dy) override {
    const Tensor dxp = ops::conv1d_backward(dy, W_, cache_, dW_, db_);
    const int64_t n = s_.n, L = n + pad_;
    Tensor dx({1, s_.d, n});
    for (int64_t c = 0; c < s_.d; ++c) std::memcpy(dx.data() + c * n, dxp.data() + c * L + pad_, n * sizeof(float));
    return dx;
  }
  int64_t activation_bytes() const override { return distinct_bytes({&cache_.x, &y_}); }

 private:
  LayerShape s_;
  int64_t pad_;
  Tensor W_, b_, dW_, db_;
  ops::ConvOptions options_;
  ops::ConvCache cache_;
  Tensor y_;
};

}  // namespace

const char* layer_name(LayerKind kind) { return info(kind).name; }
const char* layer_title(LayerKind kind) { return info(kind).title; }

LayerKind parse_layer(const std::string& name) {
  std::string valid;
  for (const KindInfo& k : kKinds) {
    if (name == k.name) return k.kind;
    valid += valid.empty() ? k.name : std::string(", ") + k.name;
  }
  throw ConfigError("unknown layer '" + name + "' (valid: " + valid + ")");
}

void check_layer_shape(LayerKind kind, const LayerShape& s) {
  auto need = [](bool ok, const std::string& what, int64_t got) {
    if (!ok) throw ConfigError("complexity: " + what + ", got " + std::to_string(got));
  };
  need(s.n >= 1, "n must be >= 1", s.n);
  need(s.d >= 1, "d must be >= 1", s.d);
  need(s.depth >= 0, "depth must be >= 0", s.depth);
  need(s.block_q >= 0, "block_q must be >= 0", s.block_q);
  if (kind == LayerKind::conv || kind == LayerKind::dilated_conv) need(s.k >= 2, "kernel width k must be >= 2", s.k);
  if (kind == LayerKind::restricted_attention) need(s.r >= 1, "window radius r must be >= 1", s.r);
  if (kind == LayerKind::multi_head_attention) {
    need(s.heads >= 1, "heads must be >= 1", s.heads);
    need(s.d % s.heads == 0, "d must be a multiple of heads (" + std::to_string(s.heads) + ")", s.d);
  }
}

std::unique_ptr<Layer> make_layer(LayerKind kind, const LayerShape& shape, Rng& rng) {
  check_layer_shape(kind, shape);
  switch (kind) {
    case LayerKind::self_attention: return std::make_unique<CoreAttention>(shape, /*restricted=*/false);
    case LayerKind::restricted_attention: return std::make_unique<CoreAttention>(shape, /*restricted=*/true);
    case LayerKind::multi_head_attention: return std::make_unique<MultiHead>(shape, rng);
    case LayerKind::lstm: return std::make_unique<Lstm>(shape, rng);
    case LayerKind::gru: return std::make_unique<Gru>(shape, rng);
    case LayerKind::conv: return std::make_unique<CausalConv>(shape, /*dilation=*/1, rng);
    case LayerKind::dilated_conv: {
      int64_t dilation = 1;
      for (int64_t i = 0; i < shape.depth; ++i) {
        dilation *= shape.k;
        if (dilation > shape.n) break;   // beyond n every tap but the last sees only padding
      }
      return std::make_unique<CausalConv>(shape, dilation, rng);
    }
  }
  throw Error("complexity: unknown layer kind");
}

}  // namespace attn::complexity

// Counting, timing and path probing of one layer, and the log-log fits (see measure.hpp).
#include "attn/complexity/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "attn/core/error.hpp"
#include "attn/core/flops.hpp"
#include "attn/core/median.hpp"

namespace attn::complexity {
namespace {

template <typename F>
double seconds_of(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool is_attention(LayerKind kind) {
  return kind == LayerKind::self_attention || kind == LayerKind::restricted_attention ||
         kind == LayerKind::multi_head_attention;
}

// Sets every channel of the marked positions: to `value`, or adds it when `add`.
void mark_positions(Tensor& x, const Layout& lo, const std::vector<char>& marked, float value, bool add) {
  const int64_t n = static_cast<int64_t>(marked.size()), d = x.numel() / n;
  float* p = x.data();
  for (int64_t t = 0; t < n; ++t) {
    if (!marked[t]) continue;
    for (int64_t c = 0; c < d; ++c) {
      float& v = p[t * lo.position_stride + c * lo.channel_stride];
      v = add ? v + value : value;
    }
  }
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

Measurement measure_layer(LayerKind kind, const LayerShape& shape, int repeats, Rng& rng) {
  if (repeats < 1) throw ConfigError("complexity: repeats must be >= 1, got " + std::to_string(repeats));
  auto layer = make_layer(kind, shape, rng);
  const Layout lo = layer->layout();
  const Tensor x = randn(lo.shape, rng), dy = randn(lo.shape, rng);

  Measurement m;
  m.layer = kind;
  m.n = shape.n;
  m.d = shape.d;
  flops::reset();
  layer->forward(x, /*train=*/true);
  m.flops_forward = flops::count();
  m.sequential_forward = flops::sequential_steps();
  m.activation_bytes = layer->activation_bytes();
  layer->backward(dy);
  m.flops_total = flops::count();
  m.sequential_total = flops::sequential_steps();

  std::vector<double> fwd, total;
  for (int i = 0; i < repeats; ++i) {
    fwd.push_back(seconds_of([&] { layer->forward(x, /*train=*/false); }));
    total.push_back(seconds_of([&] {
      layer->forward(x, /*train=*/true);
      layer->backward(dy);
    }));
  }
  m.seconds_forward = median(fwd);
  m.seconds_total = median(total);
  return m;
}

PathMeasurement measure_path(LayerKind kind, const LayerShape& shape, int64_t max_layers, Rng& rng) {
  if (max_layers < 1) throw ConfigError("complexity: max_layers must be >= 1, got " + std::to_string(max_layers));
  const int64_t n = shape.n;
  PathMeasurement pm;
  pm.layer = kind;
  pm.n = n;
  std::vector<char> influenced(n, 0);
  influenced[0] = 1;
  Tensor a;
  for (int64_t l = 0; l < max_layers; ++l) {
    LayerShape s = shape;
    s.depth = l;
    if (is_attention(kind)) s.block_q = 1;
    auto layer = make_layer(kind, s, rng);
    const Layout lo = layer->layout();
    if (l == 0) a = randn(lo.shape, rng);

    flops::reset();
    const Tensor y = layer->forward(a, /*train=*/false);
    pm.path_length += flops::sequential_steps();
    Tensor a_moved = a.clone(), a_poisoned = a.clone();
    mark_positions(a_moved, lo, influenced, 1.0f, /*add=*/true);
    mark_positions(a_poisoned, lo, influenced, std::numeric_limits<float>::quiet_NaN(), /*add=*/false);
    const Tensor y_moved = layer->forward(a_moved, false), y_poisoned = layer->forward(a_poisoned, false);

    const int64_t d = y.numel() / n;
    const float *py = y.data(), *pm_ = y_moved.data(), *pp = y_poisoned.data();
    int64_t last = -1;
    for (int64_t t = 0; t < n; ++t) {
      bool hit = false;
      for (int64_t c = 0; c < d && !hit; ++c) {
        const int64_t i = t * lo.position_stride + c * lo.channel_stride;
        hit = pm_[i] != py[i] || std::isnan(pp[i]);
      }
      influenced[t] = hit;
      if (hit) last = t;
    }
    pm.reach.push_back(last);
    if (influenced[n - 1]) {
      pm.layers = l + 1;
      return pm;
    }
    // Next layer's input: y at unit RMS, so a deep linear stack neither overflows nor underflows.
    double ss = 0.0;
    for (int64_t i = 0; i < y.numel(); ++i) ss += static_cast<double>(py[i]) * py[i];
    const float inv = ss > 0.0 ? static_cast<float>(1.0 / std::sqrt(ss / y.numel())) : 1.0f;
    a = y.clone();
    for (float& v : a.values()) v *= inv;
  }
  throw ConfigError(std::string("complexity: ") + layer_name(kind) + " at n = " + std::to_string(n) +
                    ": position 0 does not reach position n-1 within " + std::to_string(max_layers) +
                    " layers");
}

PowerLaw fit_power_law(std::span<const double> n, std::span<const double> d, std::span<const double> y) {
  const size_t m = y.size();
  if (m == 0 || n.size() != m || d.size() != m) throw ConfigError("fit_power_law: need equal, non-empty inputs");
  double mx = 0, my = 0, mz = 0;
  std::vector<double> lx(m), ly(m), lz(m);
  for (size_t i = 0; i < m; ++i) {
    if (!(n[i] > 0 && d[i] > 0 && y[i] > 0)) throw ConfigError("fit_power_law: values must be positive");
    lx[i] = std::log(n[i]);
    ly[i] = std::log(d[i]);
    lz[i] = std::log(y[i]);
    mx += lx[i];
    my += ly[i];
    mz += lz[i];
  }
  mx /= m;
  my /= m;
  mz /= m;
  double sxx = 0, syy = 0, sxy = 0, sxz = 0, syz = 0;
  for (size_t i = 0; i < m; ++i) {
    const double x = lx[i] - mx, w = ly[i] - my, z = lz[i] - mz;
    sxx += x * x;
    syy += w * w;
    sxy += x * w;
    sxz += x * z;
    syz += w * z;
  }
  constexpr double kTiny = 1e-12;
  PowerLaw f;
  const bool vx = sxx > kTiny, vy = syy > kTiny;
  if (vx && vy) {
    const double det = sxx * syy - sxy * sxy;
    f.n_exp = (sxz * syy - syz * sxy) / det;
    f.d_exp = (syz * sxx - sxz * sxy) / det;
  } else {
    f.n_exp = vx ? sxz / sxx : kNaN;
    f.d_exp = vy ? syz / syy : kNaN;
  }
  f.log_c = mz - (vx ? f.n_exp * mx : 0.0) - (vy ? f.d_exp * my : 0.0);
  return f;
}

LogLaw fit_log_law(std::span<const double> n, std::span<const double> y, double base) {
  const size_t m = y.size();
  if (m == 0 || n.size() != m) throw ConfigError("fit_log_law: need equal, non-empty inputs");
  double mx = 0, my = 0;
  for (size_t i = 0; i < m; ++i) {
    mx += std::log(n[i]) / std::log(base);
    my += y[i];
  }
  mx /= m;
  my /= m;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < m; ++i) {
    const double x = std::log(n[i]) / std::log(base) - mx;
    sxx += x * x;
    sxy += x * (y[i] - my);
  }
  LogLaw f;
  f.slope = sxx > 1e-12 ? sxy / sxx : kNaN;
  f.intercept = my - (sxx > 1e-12 ? f.slope * mx : 0.0);
  return f;
}

}  // namespace attn::complexity

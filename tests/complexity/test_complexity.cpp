// lib/complexity: the counters, the path probe and the fits against closed forms written from
// each layer's actual GEMM shapes, and the quick sweep against the theory of Vaswani et al.
// (2017, Table 1).
#include <cmath>

#include "attn/complexity/layers.hpp"
#include "attn/complexity/measure.hpp"
#include "attn/complexity/study.hpp"
#include "attn/core/flops.hpp"
#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using namespace attn::complexity;

namespace {

LayerShape small(int64_t n, int64_t d) {
  LayerShape s;
  s.n = n;
  s.d = d;
  s.k = 3;
  s.r = 2;
  s.heads = 2;
  return s;
}

Measurement measure(LayerKind kind, const LayerShape& s) {
  Rng rng(5);
  return measure_layer(kind, s, /*repeats=*/1, rng);
}

// Keys visible to query tile i of a window-r layer tiled by r rows: [(i-1) r, (i+2) r) clipped.
int64_t restricted_keys(int64_t n, int64_t r) {
  int64_t keys = 0;
  for (int64_t t0 = 0; t0 < n; t0 += r) keys += std::min(n, t0 + 2 * r) - std::max<int64_t>(0, t0 - r);
  return keys;
}

}  // namespace

TEST_CASE("FLOP counts equal the closed forms of each layer's GEMMs", "[unit][complexity]") {
  const int64_t n = 12, d = 4, k = 3, r = 2;
  SECTION("self-attention: q k^T and P v forward; backward recomputes the scores, then dP, dv, dq, dk") {
    const Measurement m = measure(LayerKind::self_attention, small(n, d));
    CHECK(m.flops_forward == 2 * n * n * d);
    CHECK(m.flops_total == 7 * n * n * d);
  }
  SECTION("restricted self-attention: r-row tiles visit only the keys in reach") {
    const Measurement m = measure(LayerKind::restricted_attention, small(n, d));
    const int64_t keys = restricted_keys(n, r);   // 4 + 6 + 6 + 6 + 6 + 4
    CHECK(keys == 32);
    CHECK(m.flops_forward == 2 * r * keys * d);
    CHECK(m.flops_total == 7 * r * keys * d);
  }
  SECTION("multi-head attention: four [n, d] x [d, d] projections around the core") {
    const Measurement m = measure(LayerKind::multi_head_attention, small(n, d));
    CHECK(m.flops_forward == 4 * n * d * d + 2 * n * n * d);
    CHECK(m.flops_total == 12 * n * d * d + 7 * n * n * d);
  }
  SECTION("LSTM: x W_ih^T once, h W_hh^T per step; backward dh per step, dW_hh, dW_ih, dx") {
    const Measurement m = measure(LayerKind::lstm, small(n, d));
    CHECK(m.flops_forward == 8 * n * d * d);
    CHECK(m.flops_total == 24 * n * d * d);
  }
  SECTION("GRU: the same with three gates") {
    const Measurement m = measure(LayerKind::gru, small(n, d));
    CHECK(m.flops_forward == 6 * n * d * d);
    CHECK(m.flops_total == 18 * n * d * d);
  }
  SECTION("convolution: W [d, d k] x col [d k, n]; backward dW and dcol") {
    for (LayerKind kind : {LayerKind::conv, LayerKind::dilated_conv}) {
      LayerShape s = small(n, d);
      s.depth = 1;   // dilation 3 for the dilated layer: same GEMM shapes
      const Measurement m = measure(kind, s);
      CHECK(m.flops_forward == k * n * d * d);
      CHECK(m.flops_total == 3 * k * n * d * d);
    }
  }
}

TEST_CASE("sequential steps: one per parallel op, one per recurrent time step", "[unit][complexity]") {
  for (int64_t n : {1, 5, 16}) {
    for (LayerKind kind : kAllLayers) {
      const Measurement m = measure(kind, small(n, 4));
      const bool recurrent = kind == LayerKind::lstm || kind == LayerKind::gru;
      INFO(layer_name(kind) << " n=" << n);
      CHECK(m.sequential_forward == (recurrent ? n : 1));
      CHECK(m.sequential_total == (recurrent ? 2 * n : 2));
    }
  }
}

TEST_CASE("activation bytes are the cache tensors plus the output, shared storage once", "[unit][complexity]") {
  const int64_t n = 10, d = 6, k = 3;
  // lstm: x [n, 1, d], hs and cs [n+1, 1, d], gates [n, 1, 4d]; y is a view of hs.
  CHECK(measure(LayerKind::lstm, small(n, d)).activation_bytes == 4 * (n * d + 2 * (n + 1) * d + 4 * n * d));
  // gru: x, hs [n+1], gates [n, 3d], hn [n, d].
  CHECK(measure(LayerKind::gru, small(n, d)).activation_bytes == 4 * (n * d + (n + 1) * d + 3 * n * d + n * d));
  // streaming attention: x (as q, k and v), its own copy of the output, lse [n], the output.
  CHECK(measure(LayerKind::self_attention, small(n, d)).activation_bytes == 4 * (3 * n * d + n));
  // causal conv: the left-padded input [d, n + k - 1] and the output [d, n].
  CHECK(measure(LayerKind::conv, small(n, d)).activation_bytes == 4 * (d * (n + k - 1) + d * n));
}

TEST_CASE("path probe: fewest stacked layers and the steps on the path", "[unit][complexity]") {
  Rng rng(3);
  const int64_t n = 9;
  auto probe = [&](LayerKind kind) { return measure_path(kind, small(n, 4), /*max_layers=*/n + 1, rng); };

  const PathMeasurement sa = probe(LayerKind::self_attention);
  CHECK(sa.layers == 1);
  CHECK(sa.path_length == 1);
  CHECK(probe(LayerKind::multi_head_attention).path_length == 1);

  const PathMeasurement ra = probe(LayerKind::restricted_attention);   // r = 2: 2 positions per layer
  CHECK(ra.layers == 4);
  CHECK(ra.reach == std::vector<int64_t>{2, 4, 6, 8});

  const PathMeasurement conv = probe(LayerKind::conv);   // k = 3, causal: k - 1 per layer
  CHECK(conv.layers == 4);
  CHECK(conv.reach == std::vector<int64_t>{2, 4, 6, 8});

  const PathMeasurement dil = probe(LayerKind::dilated_conv);   // reach 3^L - 1
  CHECK(dil.reach == std::vector<int64_t>{2, 8});
  CHECK(dil.path_length == 2);

  for (LayerKind kind : {LayerKind::lstm, LayerKind::gru}) {
    const PathMeasurement p = probe(kind);
    CHECK(p.layers == 1);
    CHECK(p.path_length == n);
  }
}

TEST_CASE("path probe: recurrent influence survives hundreds of steps (NaN poison)", "[unit][complexity]") {
  Rng rng(4);
  for (LayerKind kind : {LayerKind::lstm, LayerKind::gru}) {
    const PathMeasurement p = measure_path(kind, small(600, 4), /*max_layers=*/2, rng);
    CHECK(p.layers == 1);
    CHECK(p.path_length == 600);
  }
}

TEST_CASE("power-law and log fits recover known exponents", "[unit][complexity]") {
  std::vector<double> n, d, y;
  for (double a : {16.0, 64.0, 256.0})
    for (double b : {8.0, 32.0}) {
      n.push_back(a);
      d.push_back(b);
      y.push_back(3.0 * a * a * b);
    }
  const PowerLaw f = fit_power_law(n, d, y);
  CHECK(f.n_exp == Approx(2.0).margin(1e-9));
  CHECK(f.d_exp == Approx(1.0).margin(1e-9));
  CHECK(std::exp(f.log_c) == Approx(3.0));

  const std::vector<double> one(3, 1.0), m{9.0, 27.0, 81.0}, path{2.0, 3.0, 4.0};
  CHECK(std::isnan(fit_power_law(m, one, path).d_exp));
  const LogLaw g = fit_log_law(m, path, 3.0);
  CHECK(g.slope == Approx(1.0));
  CHECK(g.intercept == Approx(0.0).margin(1e-9));
}

TEST_CASE("the quick sweep reproduces the exponents of the theory", "[integration][complexity]") {
  const StudyReport report = run_study(StudyConfig::quick());
  REQUIRE(report.layers.size() == kAllLayers.size());
  for (const LayerResult& r : report.layers) {
    const Theory t = theory_of(r.layer);
    INFO(layer_name(r.layer));
    if (!std::isnan(t.flops_n)) {
      CHECK(std::abs(r.flops_forward.n_exp - t.flops_n) <= 0.1);
      CHECK(std::abs(r.flops_forward.d_exp - t.flops_d) <= 0.1);
      CHECK(std::abs(r.flops_total.n_exp - t.flops_n) <= 0.1);
      CHECK(std::abs(r.flops_total.d_exp - t.flops_d) <= 0.1);
    }
    CHECK(std::abs(r.sequential_n_exp - t.sequential_n) <= 0.1);
    if (t.path_logarithmic) {   // a staircase over so few n: check every point exactly
      for (const PathMeasurement& p : r.paths) {
        int64_t layers = 0;
        for (int64_t reach = 0; reach < p.n - 1; reach = reach * 3 + 2) ++layers;   // 3^L - 1
        CHECK(p.path_length == layers);
      }
    } else {
      CHECK(std::abs(r.path_n_exp - t.path_n) <= 0.1);
    }
  }
  const std::string table = format_table(report);
  CHECK_THAT(table, Catch::Contains("| self-attention | O(n^2·d) | n^2.00 d^1.00 | O(1) |"));
  CHECK_THAT(table, Catch::Contains("| recurrent (LSTM) | O(n·d^2) | n^1.00 d^2.00 | O(n) | 256 at n = 256"));
}

TEST_CASE("crossover: self-attention is cheaper than the LSTM below n = 4d in FLOPs", "[unit][complexity]") {
  // 2 n^2 d (attention core) against 8 n d^2 (LSTM): equal at n = 4d.
  StudyConfig c = StudyConfig::quick();
  c.layers = {LayerKind::self_attention, LayerKind::lstm};
  c.d = 16;
  c.n_values = {16, 32, 64, 128};
  c.d_values = {};
  c.path_n_values = {};
  const StudyReport report = run_study(c);
  REQUIRE_FALSE(report.crossovers.empty());
  const Crossover& x = report.crossovers.front();
  CHECK(x.metric == "flops_forward");
  CHECK(x.n_star == Approx(64.0));
}

TEST_CASE("the study writes every series and its settings", "[io][complexity]") {
  test::TempDir dir;
  StudyConfig c = StudyConfig::quick();
  c.layers = {LayerKind::self_attention, LayerKind::conv};
  c.n_values = {32, 64, 128};   // fits take the upper half of each sweep
  c.d_values = {16, 32};
  c.path_n_values = {16};
  const StudyReport report = run_study(c);
  const std::string path = (dir.path() / "c.h5").string();
  {
    io::File f = io::File::create(path);
    write_study(f, report);
    f.commit();
  }
  const io::File f = io::File::open_read(path);
  CHECK(f.read("/n_sweep/n").shape() == Shape{3});
  const Tensor flops = f.read("/n_sweep/flops_forward/self_attention");
  CHECK(flops.at(1) == static_cast<float>(2 * 64 * 64 * 64));
  CHECK(f.read("/d_sweep/flops_forward/conv").at(0) == static_cast<float>(3 * 64 * 16 * 16));
  CHECK(f.read("/path/length/conv").at(0) == 8.0f);
  CHECK(f.attr_int("/config", "d") == 64);
  CHECK(f.attr_string("/config", "layers") == "self_attention,conv");
  CHECK(f.attr_double("/fits/self_attention", "flops_forward_n_exp") == Approx(2.0).margin(1e-6));
  CHECK(f.attr_string("/fits/conv", "theory_path") == "O(n/k)");
}

TEST_CASE("bad settings are refused with the setting named", "[unit][complexity]") {
  Rng rng(1);
  LayerShape s = small(8, 6);
  s.heads = 4;
  REQUIRE_THROWS_WITH(make_layer(LayerKind::multi_head_attention, s, rng),
                      Catch::Contains("d must be a multiple of heads (4), got 6"));
  REQUIRE_THROWS_WITH(parse_layer("transformer"), Catch::Contains("unknown layer 'transformer' (valid: self_attention"));
  REQUIRE_THROWS_WITH(measure_path(LayerKind::conv, small(9, 4), /*max_layers=*/3, rng),
                      Catch::Contains("position 0 does not reach position n-1 within 3 layers"));
  REQUIRE_THROWS_WITH(measure_layer(LayerKind::lstm, small(4, 4), /*repeats=*/0, rng),
                      Catch::Contains("repeats must be >= 1, got 0"));
  StudyConfig c = StudyConfig::quick();
  c.n_values = {0};
  REQUIRE_THROWS_WITH(c.validate(), Catch::Contains("sizes must be >= 1, got 0"));
}

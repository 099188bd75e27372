// The complexity study: sweeps, fits, crossovers, the rendered table and the HDF5 record
// (see study.hpp).
#include "attn/complexity/study.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "attn/core/error.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::complexity {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<int64_t> powers_of_two(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t x = lo; x <= hi; x *= 2) v.push_back(x);
  return v;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

std::string fixed(double x, int digits = 2) {
  if (std::isnan(x)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x + 0.0);   // + 0.0: no "-0.00"
  return buf;
}

LayerShape shape_at(const StudyConfig& c, int64_t n, int64_t d) {
  LayerShape s;
  s.n = n;
  s.d = d;
  s.k = c.k;
  s.r = c.r;
  s.heads = c.heads;
  return s;
}

// The metrics a Measurement carries, by name, for fits, crossovers and the HDF5 record.
struct Metric {
  const char* name;
  double (*get)(const Measurement&);
};
constexpr Metric kMetrics[] = {
    {"flops_forward", [](const Measurement& m) { return static_cast<double>(m.flops_forward); }},
    {"flops_total", [](const Measurement& m) { return static_cast<double>(m.flops_total); }},
    {"seconds_forward", [](const Measurement& m) { return m.seconds_forward; }},
    {"seconds_total", [](const Measurement& m) { return m.seconds_total; }},
    {"activation_bytes", [](const Measurement& m) { return static_cast<double>(m.activation_bytes); }},
    {"sequential_forward", [](const Measurement& m) { return static_cast<double>(m.sequential_forward); }},
    {"sequential_total", [](const Measurement& m) { return static_cast<double>(m.sequential_total); }},
};
const Metric& metric(const std::string& name) {
  for (const Metric& m : kMetrics)
    if (name == m.name) return m;
  throw Error("complexity: unknown metric " + name);
}

// A power law fitted over the upper half of each sweep (sizes at or above its median): the
// theory is asymptotic, and below that fixed costs (time) and edge effects (a window of r keys
// when n is not much larger than r) bend the curves.
PowerLaw fit_metric(const LayerResult& r, const Metric& m) {
  std::vector<double> n, d, y;
  auto take = [&](const std::vector<Measurement>& sweep) {
    const size_t first = sweep.size() / 2;
    for (size_t i = first; i < sweep.size(); ++i) {
      n.push_back(static_cast<double>(sweep[i].n));
      d.push_back(static_cast<double>(sweep[i].d));
      y.push_back(std::max(m.get(sweep[i]), 1e-12));
    }
  };
  take(r.n_sweep);
  take(r.d_sweep);
  return fit_power_law(n, d, y);
}

// Where `a` stops being cheaper than `b` along the n sweep.
Crossover find_crossover(const LayerResult& a, const LayerResult& b, const Metric& m) {
  Crossover c{a.layer, b.layer, m.name, kNaN, false};
  const size_t count = std::min(a.n_sweep.size(), b.n_sweep.size());
  if (count == 0) return c;
  auto gap = [&](size_t i) { return std::log(m.get(a.n_sweep[i])) - std::log(m.get(b.n_sweep[i])); };
  for (size_t i = 1; i < count; ++i) {
    const double g0 = gap(i - 1), g1 = gap(i);
    if (g0 <= 0.0 && g1 > 0.0) {
      const double x0 = std::log(static_cast<double>(a.n_sweep[i - 1].n));
      const double x1 = std::log(static_cast<double>(a.n_sweep[i].n));
      c.n_star = std::exp(x0 + (x1 - x0) * (-g0) / (g1 - g0));
      return c;
    }
  }
  c.cheaper_everywhere = gap(0) <= 0.0 && gap(count - 1) <= 0.0;
  return c;
}

std::string exponents(const PowerLaw& p) { return "n^" + fixed(p.n_exp) + " d^" + fixed(p.d_exp); }

std::string theory_power(double n_exp, double d_exp) {
  if (std::isnan(n_exp)) return "n^2 d + n d^2";
  return "n^" + fixed(n_exp, 0) + " d^" + fixed(d_exp, 0);
}

}  // namespace

StudyConfig StudyConfig::standard() {
  StudyConfig c;
  c.n_values = powers_of_two(16, 4096);
  c.d_values = powers_of_two(32, 1024);
  c.path_n_values = powers_of_two(16, 1024);
  return c;
}

StudyConfig StudyConfig::quick() {
  StudyConfig c;
  c.n_values = powers_of_two(32, 256);
  c.d = 64;
  c.d_values = powers_of_two(16, 64);
  c.n_for_d_sweep = 64;
  c.path_n_values = powers_of_two(16, 64);
  c.r = 4;
  c.heads = 4;
  c.repeats = 1;
  return c;
}

void StudyConfig::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw ConfigError(what);
  };
  need(!layers.empty(), "complexity: no layers to measure");
  for (const auto* list : {&n_values, &d_values, &path_n_values})
    for (int64_t v : *list) need(v >= 1, "complexity: sizes must be >= 1, got " + std::to_string(v));
  need(!n_values.empty() || !d_values.empty() || !path_n_values.empty(), "complexity: every sweep is empty");
  need(d >= 1, "complexity: d must be >= 1, got " + std::to_string(d));
  need(n_for_d_sweep >= 1, "complexity: n for the d sweep must be >= 1, got " + std::to_string(n_for_d_sweep));
  need(path_d >= 1, "complexity: path d must be >= 1, got " + std::to_string(path_d));
  need(repeats >= 1, "complexity: repeats must be >= 1, got " + std::to_string(repeats));
  for (LayerKind kind : layers) {
    for (int64_t n : n_values) check_layer_shape(kind, shape_at(*this, n, d));
    for (int64_t dv : d_values) check_layer_shape(kind, shape_at(*this, n_for_d_sweep, dv));
    for (int64_t n : path_n_values) check_layer_shape(kind, shape_at(*this, n, path_d));
  }
}

Theory theory_of(LayerKind kind) {
  switch (kind) {
    case LayerKind::self_attention: return {"O(n^2·d)", "O(1)", "O(1)", 2, 1, 0, 0, false};
    case LayerKind::restricted_attention: return {"O(r·n·d)", "O(1)", "O(n/r)", 1, 1, 0, 1, false};
    case LayerKind::multi_head_attention:
      return {"O(n^2·d + n·d^2)", "O(1)", "O(1)", kNaN, kNaN, 0, 0, false};
    case LayerKind::lstm:
    case LayerKind::gru: return {"O(n·d^2)", "O(n)", "O(n)", 1, 2, 1, 1, false};
    case LayerKind::conv: return {"O(k·n·d^2)", "O(1)", "O(n/k)", 1, 2, 0, 1, false};
    case LayerKind::dilated_conv: return {"O(k·n·d^2)", "O(1)", "O(log_k n)", 1, 2, 0, kNaN, true};
  }
  throw Error("complexity: unknown layer kind");
}

const LayerResult* StudyReport::find(LayerKind kind) const {
  for (const LayerResult& r : layers)
    if (r.layer == kind) return &r;
  return nullptr;
}

StudyReport run_study(const StudyConfig& config, const StudyProgress& progress) {
  config.validate();
  StudyReport report;
  report.config = config;
  Rng rng(config.seed);
  auto say = [&](LayerKind kind, const std::string& what) {
    if (progress) progress(std::string(layer_name(kind)) + " " + what);
  };
  for (LayerKind kind : config.layers) {
    LayerResult r;
    r.layer = kind;
    for (int64_t n : config.n_values) {
      say(kind, "n=" + std::to_string(n) + " d=" + std::to_string(config.d));
      r.n_sweep.push_back(measure_layer(kind, shape_at(config, n, config.d), config.repeats, rng));
    }
    for (int64_t d : config.d_values) {
      say(kind, "n=" + std::to_string(config.n_for_d_sweep) + " d=" + std::to_string(d));
      r.d_sweep.push_back(measure_layer(kind, shape_at(config, config.n_for_d_sweep, d), config.repeats, rng));
    }
    for (int64_t n : config.path_n_values) {
      say(kind, "path n=" + std::to_string(n) + " d=" + std::to_string(config.path_d));
      r.paths.push_back(measure_path(kind, shape_at(config, n, config.path_d), /*max_layers=*/n + 1, rng));
    }

    if (!r.n_sweep.empty() || !r.d_sweep.empty()) {
      r.flops_forward = fit_metric(r, metric("flops_forward"));
      r.flops_total = fit_metric(r, metric("flops_total"));
      r.memory = fit_metric(r, metric("activation_bytes"));
      r.seconds_forward = fit_metric(r, metric("seconds_forward"));
      r.seconds_total = fit_metric(r, metric("seconds_total"));
    }
    if (!r.n_sweep.empty()) {
      std::vector<double> n, d, y;
      for (const Measurement& m : r.n_sweep) {
        n.push_back(static_cast<double>(m.n));
        d.push_back(static_cast<double>(m.d));
        y.push_back(static_cast<double>(std::max<int64_t>(m.sequential_forward, 1)));
      }
      r.sequential_n_exp = fit_power_law(n, d, y).n_exp;
    }
    if (!r.paths.empty()) {
      std::vector<double> n, y;
      for (const PathMeasurement& p : r.paths) {
        n.push_back(static_cast<double>(p.n));
        y.push_back(static_cast<double>(p.path_length));
      }
      r.path_n_exp = fit_power_law(n, std::vector<double>(n.size(), 1.0), y).n_exp;
      r.path_log = fit_log_law(n, y, static_cast<double>(config.k));
    }
    report.layers.push_back(std::move(r));
  }

  for (LayerKind a : {LayerKind::self_attention, LayerKind::multi_head_attention})
    for (LayerKind b : {LayerKind::lstm, LayerKind::gru}) {
      const LayerResult *ra = report.find(a), *rb = report.find(b);
      if (ra == nullptr || rb == nullptr || ra->n_sweep.empty()) continue;
      for (const char* m : {"flops_forward", "flops_total", "seconds_forward", "seconds_total"})
        report.crossovers.push_back(find_crossover(*ra, *rb, metric(m)));
    }
  return report;
}

std::string format_table(const StudyReport& report) {
  const StudyConfig& c = report.config;
  std::ostringstream out;
  out << "Per-layer complexity, measured (d = " << c.d << ", k = " << c.k << ", r = " << c.r
      << "; n sweep " << join(c.n_values) << ", d sweep " << join(c.d_values) << " at n = " << c.n_for_d_sweep
      << "; paths at d = " << c.path_d << " over n " << join(c.path_n_values) << ")\n\n";
  out << "| layer | complexity per layer | measured FLOPs | sequential operations | measured | "
         "maximum path length | measured |\n";
  out << "|---|---|---|---|---|---|---|\n";
  for (const LayerResult& r : report.layers) {
    const Theory t = theory_of(r.layer);
    out << "| " << layer_title(r.layer) << " | " << t.complexity << " | ";
    out << (r.n_sweep.empty() && r.d_sweep.empty() ? "—" : exponents(r.flops_forward)) << " | " << t.sequential
        << " | ";
    if (r.n_sweep.empty()) {
      out << "—";
    } else {
      const Measurement& last = r.n_sweep.back();
      out << last.sequential_forward << " at n = " << last.n << " (n^" << fixed(r.sequential_n_exp) << ")";
    }
    out << " | " << t.path << " | ";
    if (r.paths.empty()) {
      out << "—";
    } else {
      const PathMeasurement& last = r.paths.back();
      out << last.path_length << " at n = " << last.n << " (";
      if (t.path_logarithmic)
        out << fixed(r.path_log.slope) << "·log_" << c.k << " n " << (r.path_log.intercept < 0 ? "- " : "+ ")
            << fixed(std::abs(r.path_log.intercept)) << ")";
      else
        out << "n^" << fixed(r.path_n_exp) << ")";
    }
    out << " |\n";
  }

  out << "\nFitted exponents (least squares on log-log data over the upper half of each sweep):\n";
  for (const LayerResult& r : report.layers) {
    if (r.n_sweep.empty() && r.d_sweep.empty()) continue;
    const Theory t = theory_of(r.layer);
    out << "  " << layer_title(r.layer) << ": FLOPs ∝ " << exponents(r.flops_forward) << " (theory "
        << theory_power(t.flops_n, t.flops_d) << "), forward+backward ∝ " << exponents(r.flops_total)
        << "; time ∝ " << exponents(r.seconds_forward) << ", forward+backward ∝ " << exponents(r.seconds_total)
        << "; activation memory ∝ " << exponents(r.memory) << "\n";
  }

  if (!report.crossovers.empty()) {
    out << "\nCrossover (the notes: self-attention is cheaper than a recurrent layer when n < d; d = " << c.d
        << "):\n";
    for (const Crossover& x : report.crossovers) {
      out << "  " << layer_title(x.attention) << " vs " << layer_title(x.recurrent) << ", " << x.metric << ": ";
      if (!std::isnan(x.n_star))
        out << "cheaper for n < " << fixed(x.n_star, 0) << " (n*/d = " << fixed(x.n_star / c.d) << ")\n";
      else if (x.cheaper_everywhere)
        out << "cheaper at every n measured\n";
      else
        out << "no crossing where attention is cheaper below it\n";
    }
  }
  return out.str();
}

void write_study(io::File& file, const StudyReport& report) {
  const StudyConfig& c = report.config;
  auto series = [](const std::vector<double>& v) {
    Tensor t({static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.at(static_cast<int64_t>(i)) = static_cast<float>(v[i]);
    return t;
  };
  auto sizes = [&](const std::vector<int64_t>& v) { return series(std::vector<double>(v.begin(), v.end())); };
  if (!c.n_values.empty()) file.write("/n_sweep/n", sizes(c.n_values));
  if (!c.d_values.empty()) file.write("/d_sweep/d", sizes(c.d_values));
  if (!c.path_n_values.empty()) file.write("/path/n", sizes(c.path_n_values));

  for (const LayerResult& r : report.layers) {
    const std::string name = layer_name(r.layer);
    for (const Metric& m : kMetrics) {
      for (const auto& [group, sweep] : {std::pair{"/n_sweep/", &r.n_sweep}, std::pair{"/d_sweep/", &r.d_sweep}}) {
        if (sweep->empty()) continue;
        std::vector<double> v;
        for (const Measurement& x : *sweep) v.push_back(m.get(x));
        file.write(std::string(group) + m.name + "/" + name, series(v));
      }
    }
    if (!r.paths.empty()) {
      std::vector<double> layers, length;
      for (const PathMeasurement& p : r.paths) {
        layers.push_back(static_cast<double>(p.layers));
        length.push_back(static_cast<double>(p.path_length));
      }
      file.write("/path/layers/" + name, series(layers));
      file.write("/path/length/" + name, series(length));
    }
    const std::string fits = "/fits/" + name;
    const Theory t = theory_of(r.layer);
    auto put = [&](const std::string& key, const PowerLaw& p) {
      file.set_attr(fits, key + "_n_exp", p.n_exp);
      file.set_attr(fits, key + "_d_exp", p.d_exp);
    };
    put("flops_forward", r.flops_forward);
    put("flops_total", r.flops_total);
    put("seconds_forward", r.seconds_forward);
    put("seconds_total", r.seconds_total);
    put("activation_bytes", r.memory);
    file.set_attr(fits, "sequential_n_exp", r.sequential_n_exp);
    file.set_attr(fits, "path_n_exp", r.path_n_exp);
    file.set_attr(fits, "path_log_k_slope", r.path_log.slope);
    file.set_attr(fits, "theory_complexity", t.complexity);
    file.set_attr(fits, "theory_sequential", t.sequential);
    file.set_attr(fits, "theory_path", t.path);
    file.set_attr(fits, "theory_flops_n_exp", t.flops_n);
    file.set_attr(fits, "theory_flops_d_exp", t.flops_d);
    file.set_attr(fits, "theory_sequential_n_exp", t.sequential_n);
    file.set_attr(fits, "theory_path_n_exp", t.path_n);
  }
  for (const Crossover& x : report.crossovers)
    file.set_attr(std::string("/crossover/") + layer_name(x.attention) + "_vs_" + layer_name(x.recurrent),
                  "n_star_" + x.metric, x.n_star);

  std::string layers;
  for (LayerKind k : c.layers) {
    if (!layers.empty()) layers += ',';
    layers += layer_name(k);
  }
  file.set_attr("/config", "layers", layers);
  file.set_attr("/config", "n_values", join(c.n_values));
  file.set_attr("/config", "d", c.d);
  file.set_attr("/config", "d_values", join(c.d_values));
  file.set_attr("/config", "n_for_d_sweep", c.n_for_d_sweep);
  file.set_attr("/config", "path_n_values", join(c.path_n_values));
  file.set_attr("/config", "path_d", c.path_d);
  file.set_attr("/config", "k", c.k);
  file.set_attr("/config", "r", c.r);
  file.set_attr("/config", "heads", c.heads);
  file.set_attr("/config", "repeats", c.repeats);
  file.set_attr("/config", "seed", static_cast<uint64_t>(c.seed));
}

}  // namespace attn::complexity

// The complexity study behind attn-complexity: sweeps every layer type over n (at fixed d)
// and over d (at fixed n), probes maximum path lengths over n (at a small d), fits exponents
// on log-log data, finds where self-attention becomes cheaper than a recurrent layer, and
// renders Vaswani et al. (2017), Table 1 with the measured values beside the theory.
//
// Output layout (write_study; float32 datasets, one per series, for attn-plot curve X:Y):
//   /n_sweep/n, /n_sweep/<metric>/<layer>    metrics: flops_forward, flops_total,
//   /d_sweep/d, /d_sweep/<metric>/<layer>      seconds_forward, seconds_total, activation_bytes,
//                                              sequential_forward, sequential_total
//   /path/n, /path/layers/<layer>, /path/length/<layer>
//   /fits/<layer>      attributes: <metric>_n_exp, <metric>_d_exp, theory_* (NaN: no single power)
//   /crossover/<attention>_vs_<recurrent>   attributes: n_star_<metric> (NaN: no crossing)
//   /config            attributes: every setting of StudyConfig
// FLOP counts above 2^24 lose their last digits in float32; the exact counts are int64 in
// StudyReport and in the printed table.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/complexity/layers.hpp"
#include "attn/complexity/measure.hpp"

namespace attn::io {
class File;
}

namespace attn::complexity {

struct StudyConfig {
  std::vector<LayerKind> layers{kAllLayers.begin(), kAllLayers.end()};
  std::vector<int64_t> n_values;        // the n sweep, at width d
  int64_t d = 512;
  std::vector<int64_t> d_values;        // the d sweep, at length n_for_d_sweep
  int64_t n_for_d_sweep = 512;
  std::vector<int64_t> path_n_values;   // the path-length probe, at width path_d
  int64_t path_d = 8;
  int64_t k = 3;                        // convolution kernel width
  int64_t r = 16;                       // restricted attention window radius
  int64_t heads = 8;                    // multi-head attention heads
  int repeats = 3;                      // timed runs per point (median)
  uint64_t seed = 1;

  // n = 16..4096, d = 32..1024 at n = 512, path n = 16..1024 (all powers of 2): a few minutes
  // on 2 cores.
  static StudyConfig standard();
  // n = 32..256, d = 16..64 at n = 64, path n = 16..64, r = 4, one repeat: about a second.
  static StudyConfig quick();
  // Throws ConfigError naming the first bad setting.
  void validate() const;
};

// The theory row of Table 1 for one layer type. Exponents are NaN where the theory is not a
// single power of n and d (the multi-head layer's n^2 d + n d^2).
struct Theory {
  std::string complexity, sequential, path;   // "O(n^2·d)", "O(1)", "O(log_k n)"
  double flops_n = 0, flops_d = 0;
  double sequential_n = 0;
  double path_n = 0;
  bool path_logarithmic = false;              // path ~ log_k n (dilated convolution)
};
Theory theory_of(LayerKind kind);

struct LayerResult {
  LayerKind layer{};
  std::vector<Measurement> n_sweep, d_sweep;
  std::vector<PathMeasurement> paths;
  // Fits over the upper half of each sweep, n and d together (the theory is asymptotic: fixed
  // costs and a window not much shorter than n bend the small sizes), over the n sweep
  // (sequential steps) and over the path probe (a power of n, or a multiple of log_k n).
  PowerLaw flops_forward, flops_total, seconds_forward, seconds_total, memory;
  double sequential_n_exp = 0.0;
  double path_n_exp = 0.0;
  LogLaw path_log;
};

struct Crossover {
  LayerKind attention{}, recurrent{};
  std::string metric;                // "flops_forward", "flops_total", "seconds_forward", "seconds_total"
  double n_star = 0.0;               // attention is cheaper below n_star (log-interpolated); NaN: no crossing
  bool cheaper_everywhere = false;   // no crossing and attention is cheaper at every n
};

struct StudyReport {
  StudyConfig config;
  std::vector<LayerResult> layers;
  std::vector<Crossover> crossovers;
  const LayerResult* find(LayerKind kind) const;   // nullptr when not measured
};

// Called before each measurement with a line such as "lstm n=512 d=512".
using StudyProgress = std::function<void(const std::string&)>;

StudyReport run_study(const StudyConfig& config, const StudyProgress& progress = {});

// Table 1 in the notes' format with the measured columns, one line of fitted exponents per
// layer, and the crossovers. Markdown, ending with a newline.
std::string format_table(const StudyReport& report);

// Every measurement, fit and setting into `file` (layout above); root attributes are the
// caller's (io::write_file_info).
void write_study(io::File& file, const StudyReport& report);

}  // namespace attn::complexity

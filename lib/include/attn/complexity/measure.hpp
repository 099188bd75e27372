// Measurements of one layer (complexity/layers.hpp): exact multiply-adds and sequential steps
// from the library's own counters (core/flops.hpp), median wall time, exact activation bytes,
// and the maximum path length found by probing stacked layers. Plus the log-log least-squares
// fit that turns a sweep into exponents.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "attn/complexity/layers.hpp"
#include "attn/core/rng.hpp"

namespace attn::complexity {

struct Measurement {
  LayerKind layer{};
  int64_t n = 0, d = 0;
  int64_t flops_forward = 0;        // multiply-adds of one forward (flops::count)
  int64_t flops_total = 0;          // forward + backward
  int64_t sequential_forward = 0;   // dependent steps along the sequence (flops::sequential_steps)
  int64_t sequential_total = 0;     // forward + backward
  int64_t activation_bytes = 0;     // kept for backward + output (Layer::activation_bytes)
  double seconds_forward = 0.0;     // median over the repeats: inference forward
  double seconds_total = 0.0;       // median over the repeats: training forward + backward
};

// One layer of `kind` and `shape` with random weights and inputs from `rng`: one counted
// training forward + backward (which also warms up), then `repeats` >= 1 timed runs of each.
// Resets the process-wide counters (flops::reset).
Measurement measure_layer(LayerKind kind, const LayerShape& shape, int repeats, Rng& rng);

struct PathMeasurement {
  LayerKind layer{};
  int64_t n = 0;
  int64_t layers = 0;         // fewest stacked layers through which position 0 reaches n-1
  int64_t path_length = 0;    // sequential steps on that path: the stack's steps (flops counter)
  std::vector<int64_t> reach; // after each layer: the last position position 0 influences
};

// Stacks fresh layers of `kind` (shape.depth = 0, 1, ...; shape.n positions of shape.d) until
// output position n-1 depends on input position 0, at most `max_layers` (ConfigError beyond).
// Each layer is probed at the positions influenced so far (none are lost to rounding):
//  * a finite perturbation (+1 on every channel): an output that changes is influenced;
//  * NaN poison: every arithmetic op propagates NaN, so influence that a long recurrence decays
//    below float resolution still shows. The attention layers run with one-row query tiles
//    here, so no masked key ever enters a tile (0 * NaN would poison it falsely).
// An output position is influenced if either probe says so; activations are rescaled to unit
// RMS between layers (a position-wise stand-in for layer norm) so deep stacks stay finite.
PathMeasurement measure_path(LayerKind kind, const LayerShape& shape, int64_t max_layers, Rng& rng);

// y ~ c n^n_exp d^d_exp by least squares on (log n, log d, log y). An exponent whose variable
// does not vary over the points is NaN (not determined). Needs positive values.
struct PowerLaw {
  double log_c = 0.0, n_exp = 0.0, d_exp = 0.0;
};
PowerLaw fit_power_law(std::span<const double> n, std::span<const double> d, std::span<const double> y);

// y ~ a log_base(n) + b by least squares (for the O(log_k n) path of dilated convolutions).
struct LogLaw {
  double slope = 0.0, intercept = 0.0;
};
LogLaw fit_log_law(std::span<const double> n, std::span<const double> y, double base);

}  // namespace attn::complexity

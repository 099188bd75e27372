// Axis ticks at round numbers.
//
// Linear ticks are the multiples of a "nice" step (1, 2 or 5 times a power of ten) that fall
// inside [lo, hi] (Heckbert, "Nice numbers for graph labels", Graphics Gems, 1990). Logarithmic
// ticks are the powers of ten inside the range, with 2 and 5 times them when the range spans
// less than two decades. Labels print just the digits the step needs ("0.25", "1000", "1e-05").
#pragma once
#include <string>
#include <vector>

namespace attn::plot {

struct Ticks {
  std::vector<double> values;          // increasing, inside [lo, hi]
  std::vector<std::string> labels;     // one per value
};

// At most about max_ticks ticks (at least 2 for any lo < hi). lo == hi gives the one value.
Ticks linear_ticks(double lo, double hi, int max_ticks = 6);
// 0 < lo <= hi, else ConfigError.
Ticks log_ticks(double lo, double hi, int max_ticks = 8);

// The nice number near x > 0: 1, 2, 5 or 10 times a power of ten; rounded to the nearest when
// `round`, else the smallest not below x (Heckbert 1990).
double nice_number(double x, bool round);

// v printed with the decimals a tick step needs; scientific when very large or small.
std::string format_tick(double v, double step);

}  // namespace attn::plot

// Ticks at round numbers on linear and logarithmic axes, and their labels.
#include "attn/plot/ticks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/core/error.hpp"

namespace attn::plot {

double nice_number(double x, bool round) {
  const double exp10 = std::pow(10.0, std::floor(std::log10(x)));
  const double f = x / exp10;   // in [1, 10)
  double nf;
  if (round)
    nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  else
    nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return nf * exp10;
}

std::string format_tick(double v, double step) {
  char buf[64];
  if (std::fabs(v) < step * 1e-9) v = 0;   // no "-0.0" from rounding
  const double mag = std::max(std::fabs(v), step);
  if (mag >= 1e6 || step < 1e-4) {
    // Scientific, with the mantissa digits the step needs: 1.5e+06, 2e-05.
    const int digits = std::max(0, static_cast<int>(std::floor(std::log10(mag) + 1e-9)) -
                                       static_cast<int>(std::floor(std::log10(step) + 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*e", std::min(digits, 6), v);
    // Drop trailing zeros of the mantissa ("2.50e-05" -> "2.5e-05").
    std::string s = buf;
    const size_t e = s.find('e');
    size_t end = e;
    while (end > 0 && s[end - 1] == '0') --end;
    if (end > 0 && s[end - 1] == '.') --end;
    return s.substr(0, end) + s.substr(e);
  }
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

Ticks linear_ticks(double lo, double hi, int max_ticks) {
  Ticks t;
  if (!(lo < hi)) {
    t.values = {lo};
    t.labels = {format_tick(lo, std::max(std::fabs(lo), 1.0))};
    return t;
  }
  double step = nice_number((hi - lo) / std::max(1, max_ticks - 1), /*round=*/true);
  // Rounding the step up can leave one multiple inside a short range: step down until two fit.
  while (std::floor(hi / step + 1e-9) - std::ceil(lo / step - 1e-9) < 1) step = nice_number(step * 0.4, /*round=*/true);
  const double eps = step * 1e-9;
  for (double k = std::ceil((lo - eps) / step); k * step <= hi + eps; k += 1) {
    const double v = k * step;
    t.values.push_back(v);
    t.labels.push_back(format_tick(v, step));
  }
  return t;
}

Ticks log_ticks(double lo, double hi, int max_ticks) {
  if (!(lo > 0) || !(hi >= lo)) throw ConfigError("log axis: range must be positive");
  const int first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
  Ticks t;
  auto add = [&](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    t.values.push_back(v);
    t.labels.push_back(buf);
  };
  if (last - first >= 2) {
    // Whole decades, every `stride`-th when there are too many.
    const int stride = std::max(1, (last - first + max_ticks) / max_ticks);
    for (int k = first; k <= last; k += stride) add(std::pow(10.0, k));
    return t;
  }
  // Two decades or less: 1, 2, 5 times the powers of ten inside the range.
  for (int k = first - 1; k <= last; ++k)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, k);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) add(v);
    }
  if (t.values.size() >= 2) return t;
  return linear_ticks(lo, hi, std::min(max_ticks, 5));   // a narrow range inside one decade
}

}  // namespace attn::plot

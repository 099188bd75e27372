// The median of a sample: the middle value, the mean of the middle two for an even count, NaN
// for none. One definition for every report of repeated runs or timings.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace attn {

inline double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace attn

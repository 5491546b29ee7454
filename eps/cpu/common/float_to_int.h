// Floating-point to integer conversion without undefined behaviour, for every kernel that turns
// data or attributes into counts, indices or integer elements (a hostile model's NaN or 1e30
// must not reach a plain static_cast).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace nxrt::cpu {

// Truncates toward zero like static_cast when the result fits; NaN becomes 0 and everything
// else outside D's range (infinities included) saturates to D's minimum or maximum. C++ leaves
// those cases undefined and x86 would produce the "integer indefinite" value, which is not what
// a model means.
template <class D>
inline D SaturatingFloatToInt(double f) {
  static_assert(std::is_integral_v<D> && !std::is_same_v<D, bool>);
  if (std::isnan(f)) return D(0);
  // 2^digits is exactly representable; D's range is [min, 2^digits) with min = -2^digits or 0.
  const double limit = std::ldexp(1.0, std::numeric_limits<D>::digits);
  const double t = std::trunc(f);
  if (t >= limit) return std::numeric_limits<D>::max();
  if (t < static_cast<double>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
  return static_cast<D>(t);
}

// The common case: an int64 count or index.
inline int64_t SaturatingToInt64(double f) { return SaturatingFloatToInt<int64_t>(f); }

}  // namespace nxrt::cpu

// Element conversion between any two supported tensor element types (except strings), shared by
// Cast, CastLike and the quantisation kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu::elementwise {

// A floating-point value as integer type D without undefined behaviour: truncates toward zero
// like static_cast when the result fits; NaN becomes 0 and everything else outside D's range
// (infinities included) saturates to D's minimum or maximum. C++ leaves those cases undefined
// and x86 would produce the "integer indefinite" value, which is not what a model means.
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

// True for the types ConvertArray handles: numbers, bool, float16 / bfloat16, float8, float4,
// int4 / uint4.
bool IsConvertible(NxElementType t);

// Converts n elements of type `src_type` at `src` into `dst` (type `dst_type`), following ONNX
// Cast: numpy-like static conversions, round-to-nearest-even into narrower floats, and the
// float8 saturation rules (`saturate`). Sub-byte types are packed two per byte, low nibble
// first; `dst` must have room for the whole packed output. Parallel over `threads`.
void ConvertArray(const void* src, NxElementType src_type, void* dst, NxElementType dst_type,
                  int64_t n, bool saturate, int threads);

// Elements [begin, begin + m) of a tensor of type `t` (any convertible type) as floats.
void LoadFloats(const void* src, NxElementType t, int64_t begin, int64_t m, float* out);

// Writes m floats into elements [begin, begin + m) of a tensor of type `t`. Sub-byte outputs
// are written nibble by nibble: concurrent callers must own whole bytes.
void StoreFloats(const float* in, int64_t m, void* dst, NxElementType t, int64_t begin,
                 bool saturate);

}  // namespace nxrt::cpu::elementwise

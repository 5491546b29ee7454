// Helpers shared by the 8-bit quantized linear-algebra ops (MatMulInteger, QLinearMatMul,
// ConvInteger, QLinearConv): reading scales and zero points (per tensor or per row/column/
// channel), widening inputs to int32 with the zero point removed, and requantizing.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/broadcast.h"
#include "common/dispatch.h"

namespace nxrt::cpu::linalg {

inline bool IsInt8Type(NxElementType t) { return t == NX_TYPE_INT8 || t == NX_TYPE_UINT8; }

// A zero point as int32 values: a single value (per tensor) or `expected` values (per row,
// column or channel). Absent means 0.
inline std::vector<int32_t> ReadZeroPoint(const std::optional<ep::ConstTensor>& zp,
                                          NxElementType data_type, int64_t expected,
                                          const std::string& what) {
  if (!zp) return {0};
  NXRT_EP_ENFORCE(zp->type() == data_type, what + " must have the element type of its data (" +
                                               ep::ElementTypeName(data_type) + "), got " +
                                               ep::ElementTypeName(zp->type()));
  const int64_t n = static_cast<int64_t>(zp->size());
  NXRT_EP_ENFORCE(n == 1 || (n == expected && zp->rank() <= 1),
                  what + " must be a scalar or a 1-D tensor of " + std::to_string(expected) +
                      " elements, got " + ShapeToString(zp->shape()));
  std::vector<int32_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    out[i] = zp->type() == NX_TYPE_INT8 ? int32_t(zp->data<int8_t>()[i])
                                        : int32_t(zp->data<uint8_t>()[i]);
  }
  return out;
}

// A scale as float values (float32, float16 or bfloat16 storage), scalar or `expected` values.
inline std::vector<float> ReadScale(const ep::ConstTensor& s, int64_t expected,
                                    const std::string& what) {
  const int64_t n = static_cast<int64_t>(s.size());
  NXRT_EP_ENFORCE(n == 1 || (n == expected && s.rank() <= 1),
                  what + " must be a scalar or a 1-D tensor of " + std::to_string(expected) +
                      " elements, got " + ShapeToString(s.shape()));
  std::vector<float> out(n);
  switch (s.type()) {
    case NX_TYPE_FLOAT:
      for (int64_t i = 0; i < n; ++i) out[i] = s.data<float>()[i];
      break;
    case NX_TYPE_FLOAT16:
      for (int64_t i = 0; i < n; ++i) out[i] = s.data<Half>()[i];
      break;
    case NX_TYPE_BFLOAT16:
      for (int64_t i = 0; i < n; ++i) out[i] = s.data<BFloat16>()[i];
      break;
    default:
      UnsupportedType((what + " type").c_str(), s.type());
  }
  return out;
}

// Rounds a float to the precision of the scale's storage type, so products of float16 scales
// behave as in a float16 computation.
inline float RoundToScaleType(float v, NxElementType t) {
  if (t == NX_TYPE_FLOAT16) return static_cast<float>(Half(v));
  if (t == NX_TYPE_BFLOAT16) return static_cast<float>(BFloat16(v));
  return v;
}

// out[i] = int32(x[i]) - zp[channel(i)], where channel(i) = (i / inner) % zp.size().
inline void WidenSubtract(const ep::ConstTensor& x, const std::vector<int32_t>& zp, int64_t inner,
                          int32_t* out) {
  const size_t n = x.size();
  const int64_t channels = static_cast<int64_t>(zp.size());
  auto run = [&](const auto* src) {
    if (channels == 1) {
      const int32_t z = zp[0];
      for (size_t i = 0; i < n; ++i) out[i] = int32_t(src[i]) - z;
      return;
    }
    for (size_t i = 0; i < n; ++i) out[i] = int32_t(src[i]) - zp[(int64_t(i) / inner) % channels];
  };
  if (x.type() == NX_TYPE_INT8)
    run(x.data<int8_t>());
  else
    run(x.data<uint8_t>());
}

// Saturating requantization: round half to even (as numpy's rint), add the zero point, clamp.
// NaN (a NaN or zero output scale) becomes 0: std::clamp passes NaN through and converting it to
// an integer is undefined.
inline void Requantize(double value, int32_t zero_point, NxElementType out_type, void* out,
                       size_t index) {
  double r = std::nearbyint(value) + zero_point;
  if (std::isnan(r)) r = 0.0;
  if (out_type == NX_TYPE_INT8) {
    static_cast<int8_t*>(out)[index] = static_cast<int8_t>(std::clamp(r, -128.0, 127.0));
  } else {
    static_cast<uint8_t*>(out)[index] = static_cast<uint8_t>(std::clamp(r, 0.0, 255.0));
  }
}

// Requantize over `count` sums of one scale: out[i] = Requantize(acc[i] * scale), raised to at
// least `floor` (a fused Relu: the zero point; else the type's minimum). RequantizeRunScalar is
// the definition; RequantizeRun computes the same 16 at a time with AVX2 (a scalar loop took
// 15% of a QOperator MobileNetV2).
template <class T>
void RequantizeRunScalar(const int32_t* acc, int64_t count, double scale, int32_t zero_point,
                         int32_t floor, T* out) {
  constexpr double kLo = std::is_signed_v<T> ? -128.0 : 0.0;
  constexpr double kHi = std::is_signed_v<T> ? 127.0 : 255.0;
  const double lo = std::max(kLo, static_cast<double>(floor));
  for (int64_t i = 0; i < count; ++i) {
    double r = std::nearbyint(static_cast<double>(acc[i]) * scale) + zero_point;
    if (std::isnan(r)) r = 0.0;
    out[i] = static_cast<T>(std::clamp(std::max(r, lo), kLo, kHi));
  }
}

// 16 sums (in two registers of 8) as RequantizeRunScalar, for a finite scale, as 16 bytes: the
// product is then finite, and clamping it to +-2^30 (which saturates either way) keeps the
// conversion in range; the conversion rounds half to even as nearbyint does in the default rounding
// mode, and the packs saturate to T.
template <class T>
inline __m128i Requantize16(__m256i lo8, __m256i hi8, double scale, int32_t zero_point,
                            int32_t floor) {
  const __m256d s = _mm256_set1_pd(scale), lim = _mm256_set1_pd(1073741824.0);
  const __m256d neg_lim = _mm256_set1_pd(-1073741824.0);
  const __m128i zp = _mm_set1_epi32(zero_point), fl = _mm_set1_epi32(floor);
  const __m128i quarter[4] = {_mm256_castsi256_si128(lo8), _mm256_extracti128_si256(lo8, 1),
                              _mm256_castsi256_si128(hi8), _mm256_extracti128_si256(hi8, 1)};
  __m128i q[4];
  for (int i = 0; i < 4; ++i) {
    __m256d d = _mm256_cvtepi32_pd(quarter[i]);
    d = _mm256_min_pd(_mm256_max_pd(_mm256_mul_pd(d, s), neg_lim), lim);
    q[i] = _mm_max_epi32(_mm_add_epi32(_mm256_cvtpd_epi32(d), zp), fl);
  }
  const __m128i w0 = _mm_packs_epi32(q[0], q[1]), w1 = _mm_packs_epi32(q[2], q[3]);
  return std::is_signed_v<T> ? _mm_packs_epi16(w0, w1) : _mm_packus_epi16(w0, w1);
}

template <class T>
void RequantizeRun(const int32_t* acc, int64_t count, double scale, int32_t zero_point,
                   int32_t floor, T* out) {
  int64_t i = 0;
  if (std::isfinite(scale)) {
    for (; i + 16 <= count; i += 16) {
      const auto* v = reinterpret_cast<const __m256i*>(acc + i);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       Requantize16<T>(_mm256_loadu_si256(v), _mm256_loadu_si256(v + 1), scale,
                                       zero_point, floor));
    }
  }
  RequantizeRunScalar(acc + i, count - i, scale, zero_point, floor, out + i);
}

}  // namespace nxrt::cpu::linalg

// AVX2 helpers for the reduction family: a vector exp, contiguous max / exp-and-sum loops and
// float16 <-> float conversion. The CPU EP is built with -mavx2 -mfma -mf16c, so these are used
// unconditionally.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common/half.h"

namespace nxrt::cpu::reduction {

// dst[i] = float(src[i]) for 16-bit floats (F16C for IEEE half, a shift for bfloat16).
template <class H>
inline void WidenToFloat(const H* src, float* dst, int64_t n) {
  int64_t i = 0;
  if constexpr (std::is_same_v<H, Half>) {
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
  }
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// dst[i] = H(src[i]), rounding to nearest even.
template <class H>
inline void NarrowFromFloat(const float* src, H* dst, int64_t n) {
  int64_t i = 0;
  if constexpr (std::is_same_v<H, Half>) {
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
  }
  for (; i < n; ++i) dst[i] = H(src[i]);
}

// exp(x) for 8 floats known to be <= 0 (softmax inputs after subtracting the row maximum; not
// NaN). Cheaper than Exp8: no overflow or NaN handling, and round-to-integer through the "magic
// number" trick: adding 1.5 * 2^23 + 127 leaves round(x * log2e) + 127 in the low mantissa bits,
// ready to be shifted into the exponent field. Inputs below ln(FLT_MIN) (including -inf) clamp
// there, giving ~1e-38 instead of 0, which is immaterial after normalisation. Degree-6 polynomial
// fitted for relative error on [-ln2/2, ln2/2] (about 1 ulp in float arithmetic).
inline __m256 ExpNonPositive8(__m256 x) {
  const __m256 kMagic = _mm256_set1_ps(12583039.0f);  // 1.5 * 2^23 + 127
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3365478515625f));
  const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), kMagic);
  const __m256 n = _mm256_sub_ps(t, kMagic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(0.0013836841098964214f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.008374815806746483f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.04166822507977486f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.16666419804096222f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.49999991059303284f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23));
  return _mm256_mul_ps(p, scale);
}

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float HorizontalMax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float HorizontalMin(__m256 v) {
  __m128 s = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_min_ps(s, _mm_movehl_ps(s, s));
  s = _mm_min_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// max(x[0, n)) (or min with kMax = false); NaN if any element is NaN.
template <bool kMax = true>
inline float ExtremeOf(const float* x, int64_t n) {
  int64_t i = 0;
  float m = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  bool nan = false;
  if (n >= 16) {
    __m256 a = _mm256_set1_ps(m), b = a;
    __m256 bad = _mm256_setzero_ps();
    for (; i + 16 <= n; i += 16) {
      __m256 u = _mm256_loadu_ps(x + i), v = _mm256_loadu_ps(x + i + 8);
      a = kMax ? _mm256_max_ps(a, u) : _mm256_min_ps(a, u);
      b = kMax ? _mm256_max_ps(b, v) : _mm256_min_ps(b, v);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(u, v, _CMP_UNORD_Q));
    }
    m = kMax ? HorizontalMax(_mm256_max_ps(a, b)) : HorizontalMin(_mm256_min_ps(a, b));
    nan = _mm256_movemask_ps(bad) != 0;
  }
  for (; i < n; ++i) {
    if (std::isnan(x[i])) nan = true;
    m = (kMax ? x[i] > m : x[i] < m) ? x[i] : m;
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

inline float MaxOf(const float* x, int64_t n) { return ExtremeOf<true>(x, n); }

// The loops below compute exp(x - shift) with shift a finite maximum of the x involved, so every
// argument is <= 0 (or NaN-free -inf) and ExpNonPositive8 applies.

// y[i] = exp(x[i] - shift) for i in [0, n) and returns their sum.
inline float ExpShiftSum(const float* x, float shift, float* y, int64_t n) {
  int64_t i = 0;
  const __m256 s = _mm256_set1_ps(shift);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    __m256 e0 = ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    __m256 e1 = ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), s));
    _mm256_storeu_ps(y + i, e0);
    _mm256_storeu_ps(y + i + 8, e1);
    acc0 = _mm256_add_ps(acc0, e0);
    acc1 = _mm256_add_ps(acc1, e1);
  }
  for (; i + 8 <= n; i += 8) {
    __m256 e = ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, e);
    acc0 = _mm256_add_ps(acc0, e);
  }
  float sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) {
    y[i] = std::exp(x[i] - shift);
    sum += y[i];
  }
  return sum;
}

// sum(exp(x[i] - shift)) for i in [0, n), without storing.
inline float ExpShiftSumOnly(const float* x, float shift, int64_t n) {
  int64_t i = 0;
  const __m256 s = _mm256_set1_ps(shift);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_add_ps(acc0, ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
    acc1 = _mm256_add_ps(acc1, ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), s)));
  }
  for (; i + 8 <= n; i += 8) {
    acc0 = _mm256_add_ps(acc0, ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
  }
  float sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += std::exp(x[i] - shift);
  return sum;
}

// y[j] = exp(x[j] - shift[j]); sum[j] += y[j] for j in [0, n): one row of a column block.
inline void ExpShiftAccumulate(const float* x, const float* shift, float* y, float* sum,
                               int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 e = ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(shift + j)));
    _mm256_storeu_ps(y + j, e);
    _mm256_storeu_ps(sum + j, _mm256_add_ps(_mm256_loadu_ps(sum + j), e));
  }
  for (; j < n; ++j) {
    y[j] = std::exp(x[j] - shift[j]);
    sum[j] += y[j];
  }
}

}  // namespace nxrt::cpu::reduction

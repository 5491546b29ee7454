// exp, sigmoid, tanh and SiLU over float arrays, eight lanes at a time (the CPU EP is built for
// AVX2 + FMA; GCC does not vectorise std::exp / std::tanh without -ffast-math, and those calls
// were a fifth of a recurrent model's run). Scalar std:: functions finish the last n % 8.
//
// Accuracy (float): exp by x = n ln2 + r, |r| <= ln2 / 2, the Taylor polynomial of exp(r) to
// r^6 (relative error about 1.2e-7) and 2^n in the exponent bits; arguments are clamped to
// [-87, 88], where results still are normal floats. tanh uses its Taylor series to x^13 below
// |x| = 0.5 (error below 5e-8) and (1 - e) / (1 + e), e = exp(-2|x|), above. NaN stays NaN.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace nxrt::cpu {

// exp of eight floats; the argument must not be NaN (callers restore NaN lanes afterwards).
inline __m256 Exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2 in two parts, the first with few mantissa bits so that n * hi is exact.
  const __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f),
                                    _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x));
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

// Lanes of `x` that are NaN keep x; the others take `value`.
inline __m256 KeepNaN(__m256 x, __m256 value) {
  return _mm256_blendv_ps(value, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// Zero for NaN lanes (so that Exp8 gets a number), x elsewhere.
inline __m256 NaNToZero(__m256 x) { return _mm256_and_ps(x, _mm256_cmp_ps(x, x, _CMP_ORD_Q)); }

// 1 / (1 + exp(-x)); exactly 0 below x = -88, where the clamped exp would leave 6e-39 (and
// x * sigmoid(x) of a huge negative x would not be 0).
inline __m256 Sigmoid8(__m256 x) {
  const __m256 e = Exp8(_mm256_sub_ps(_mm256_setzero_ps(), NaNToZero(x)));
  __m256 s = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  s = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-88.0f), _CMP_LT_OQ), s);
  return KeepNaN(x, s);
}

inline __m256 Tanh8(__m256 x) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign_mask, NaNToZero(x));
  // Large |x|: (1 - e) / (1 + e) with e = exp(-2|x|), sign restored.
  const __m256 e = Exp8(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 big = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  big = _mm256_or_ps(big, _mm256_and_ps(x, sign_mask));
  // Small |x|: x (1 + x^2 (c3 + x^2 (c5 + ...))), no cancellation near 0.
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(21844.0f / 6081075.0f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1382.0f / 155925.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(62.0f / 2835.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-17.0f / 315.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.0f / 15.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.0f / 3.0f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, x2), x, x);
  const __m256 use_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.5f), _CMP_LT_OQ);
  return KeepNaN(x, _mm256_blendv_ps(big, small, use_small));
}

inline void SigmoidInPlace(float* v, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(v + i, Sigmoid8(_mm256_loadu_ps(v + i)));
  for (; i < n; ++i) v[i] = 1.0f / (1.0f + std::exp(-v[i]));
}

inline void TanhInPlace(float* v, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(v + i, Tanh8(_mm256_loadu_ps(v + i)));
  for (; i < n; ++i) v[i] = std::tanh(v[i]);
}

// x * sigmoid(alpha x) (SiLU / Swish).
inline void SwishInPlace(float* v, int64_t n, float alpha) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(v + i);
    _mm256_storeu_ps(v + i, _mm256_mul_ps(x, Sigmoid8(_mm256_mul_ps(va, x))));
  }
  for (; i < n; ++i) v[i] = v[i] / (1.0f + std::exp(-alpha * v[i]));
}

}  // namespace nxrt::cpu

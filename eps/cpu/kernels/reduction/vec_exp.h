// AVX2 helpers for the softmax family: a vector exp and contiguous max / exp-and-sum loops.
// The CPU EP is built with -mavx2 -mfma, so these are used unconditionally.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace nxrt::cpu::reduction {

// exp(x) for 8 floats, within about 2 ulp for normal results. Range reduction x = n*ln2 + r with
// |r| <= ln2/2 (ln2 split in two parts so n*ln2 is exact enough), then a degree-7 Taylor
// polynomial for e^r (truncation error < 1e-8 there) and 2^n built in the exponent field.
// Results below the smallest normal float flush to 0; NaN propagates.
inline __m256 Exp8(__m256 x) {
  const __m256 kMax = _mm256_set1_ps(88.3762626647949f);
  const __m256 kMin = _mm256_set1_ps(-87.3365478515625f);  // ~ ln(FLT_MIN)
  const __m256 kLog2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 kLn2Hi = _mm256_set1_ps(0.693359375f);
  const __m256 kLn2Lo = _mm256_set1_ps(-2.12194440e-4f);
  const __m256 nan_mask = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 under = _mm256_cmp_ps(x, kMin, _CMP_LT_OQ);
  const __m256 over = _mm256_cmp_ps(x, kMax, _CMP_GT_OQ);
  __m256 xc = _mm256_min_ps(_mm256_max_ps(x, kMin), kMax);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, kLog2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, kLn2Hi, xc);
  r = _mm256_fnmadd_ps(n, kLn2Lo, r);
  // Horner: 1 + r(1 + r/2(1 + r/3(1 + r/4(1 + r/5(1 + r/6(1 + r/7)))))) in coefficient form.
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n: n is in [-126, 127] after clamping.
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  y = _mm256_andnot_ps(under, y);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(std::numeric_limits<float>::infinity()), over);
  return _mm256_blendv_ps(y, x, nan_mask);
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

// max(x[0, n)); NaN if any element is NaN.
inline float MaxOf(const float* x, int64_t n) {
  int64_t i = 0;
  float m = -std::numeric_limits<float>::infinity();
  bool nan = false;
  if (n >= 16) {
    __m256 a = _mm256_set1_ps(m), b = a;
    __m256 bad = _mm256_setzero_ps();
    for (; i + 16 <= n; i += 16) {
      __m256 u = _mm256_loadu_ps(x + i), v = _mm256_loadu_ps(x + i + 8);
      a = _mm256_max_ps(a, u);
      b = _mm256_max_ps(b, v);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(u, v, _CMP_UNORD_Q));
    }
    m = HorizontalMax(_mm256_max_ps(a, b));
    nan = _mm256_movemask_ps(bad) != 0;
  }
  for (; i < n; ++i) {
    if (std::isnan(x[i])) nan = true;
    m = x[i] > m ? x[i] : m;
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

// y[i] = exp(x[i] - shift) for i in [0, n) and returns their sum. y may alias x.
inline float ExpShiftSum(const float* x, float shift, float* y, int64_t n) {
  int64_t i = 0;
  const __m256 s = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = HorizontalSum(acc);
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
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
  float sum = HorizontalSum(acc);
  for (; i < n; ++i) sum += std::exp(x[i] - shift);
  return sum;
}

// y[j] = exp(x[j] - shift[j]); sum[j] += y[j] for j in [0, n): one row of a column block.
inline void ExpShiftAccumulate(const float* x, const float* shift, float* y, float* sum,
                               int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(shift + j)));
    _mm256_storeu_ps(y + j, e);
    _mm256_storeu_ps(sum + j, _mm256_add_ps(_mm256_loadu_ps(sum + j), e));
  }
  for (; j < n; ++j) {
    y[j] = std::exp(x[j] - shift[j]);
    sum[j] += y[j];
  }
}

}  // namespace nxrt::cpu::reduction

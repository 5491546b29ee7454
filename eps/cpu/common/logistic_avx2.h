// exp and the logistic function on one AVX2 vector (8 floats), inline: the array functions of
// kernels/elementwise/vec_math.h and the convolution epilogues that apply Sigmoid / Swish in
// registers (pointwise_conv_body.h) share them. Include only from files built for AVX2 + FMA;
// like common/simd_avx2.h they sit in an unnamed namespace, so no copy built for another ISA
// can be linked in their place.
#pragma once

#include <immintrin.h>

namespace nxrt::cpu {
namespace {

// Range reduction shared by exp and expm1: x = n ln2 + r with |r| <= ln2 / 2 (two-part ln2).
// `x` must already be clamped. Returns r and n (as floats).
inline void Reduce8(__m256 x, __m256* n, __m256* r) {
  *n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm256_fnmadd_ps(*n, _mm256_set1_ps(0.693359375f), x);
  *r = _mm256_fnmadd_ps(*n, _mm256_set1_ps(-2.12194440e-4f), *r);
}

// expm1(r) - r for |r| <= ln2 / 2: r^2 times a degree-5 Taylor polynomial.
inline __m256 Expm1MinusR8(__m256 r) {
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  return _mm256_mul_ps(_mm256_mul_ps(p, r), r);
}

inline __m256 Pow2(__m256i n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

// exp(x): 2^n exp(r), with 2^n applied in two halves so that results that are subnormal or
// overflow come out right (denormal / 0 / inf) instead of wrapping in the exponent field.
// max(lo, x) / min(hi, x) return x when it is NaN, which then propagates.
inline __m256 Exp8(__m256 x) {
  __m256 xc = _mm256_min_ps(_mm256_set1_ps(89.0f), _mm256_max_ps(_mm256_set1_ps(-104.0f), x));
  __m256 n, r;
  Reduce8(xc, &n, &r);
  __m256 p = _mm256_add_ps(_mm256_add_ps(Expm1MinusR8(r), r), _mm256_set1_ps(1.0f));
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i n1 = _mm256_srai_epi32(ni, 1);
  __m256i n2 = _mm256_sub_epi32(ni, n1);
  return _mm256_mul_ps(_mm256_mul_ps(p, Pow2(n1)), Pow2(n2));
}

// 1 / (1 + exp(-x))
inline __m256 Sigmoid8(__m256 x) {
  __m256 e = Exp8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));
  return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

}  // namespace
}  // namespace nxrt::cpu

// exp(x <= 0) and the logistic function on one AVX-512 vector (16 floats), inline: the array
// functions of kernels/elementwise/vec_math_avx512.cc and the convolution epilogues that apply
// Sigmoid / Swish in registers (pointwise_conv_body.h) share them. Accuracy notes in
// vec_math_avx512.cc. Include only from files built with the AVX-512 flags; unnamed namespace as
// in common/simd_avx512.h.
#pragma once

#include <immintrin.h>

namespace nxrt::cpu {
namespace {

// The zero-masked forms with every lane selected: GCC 12 warns that the plain ones read an
// uninitialised source (-Wmaybe-uninitialized) in its own headers.
constexpr __mmask16 kAllLanes16 = 0xffff;

// exp(r) for a reduced argument |r| <= ln2 / 2 (a little more is fine): 1 + r + r^2 P5(r).
inline __m512 ExpReduced16(__m512 r) {
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  return _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
}

// exp(x) for x <= 0 (callers pass -|x|): x = n ln2 + r, exp(r) by ExpReduced16.
inline __m512 ExpNonPositive16(__m512 x) {
  // exp rounds to 0 below -104; clamping keeps r finite. max(lo, x) is x when x is NaN.
  const __m512 xc = _mm512_maskz_max_ps(kAllLanes16, _mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_maskz_roundscale_ps(
      kAllLanes16, _mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  return _mm512_maskz_scalef_ps(kAllLanes16, ExpReduced16(r), n);
}

// 1 / (1 + exp(-x)); NaN in, NaN out.
inline __m512 Sigmoid16(__m512 x) {
  const __m512 ax = _mm512_abs_ps(x);
  const __m512 e = ExpNonPositive16(_mm512_sub_ps(_mm512_setzero_ps(), ax));
  const __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), e);
  __m512 s = _mm512_maskz_rcp14_ps(kAllLanes16, d);
  s = _mm512_fmadd_ps(s, _mm512_fnmadd_ps(d, s, _mm512_set1_ps(1.0f)), s);  // one Newton step
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_mul_ps(s, negative, e, s);  // e / (1 + e) for x < 0
}

}  // namespace
}  // namespace nxrt::cpu

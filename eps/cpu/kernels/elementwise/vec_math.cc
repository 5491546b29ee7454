// AVX2 + FMA float32 approximations of exp, sigmoid, tanh, erf and the activations built on
// them. The coefficients are Taylor series (exp, tanh and erf near 0) and a Chebyshev fit of
// x * exp(x^2) * erfc(x) in 1/x on [1, 10.5] (made for this file with numpy against math.erfc,
// max relative error 9e-8 when evaluated in float).
#include "kernels/elementwise/vec_math.h"

#include <immintrin.h>

#include <cstring>

namespace nxrt::cpu::elementwise {
namespace {

inline __m256 Set(float v) { return _mm256_set1_ps(v); }

// exp(x). Range reduction x = n ln2 + r (|r| <= ln2/2) with a two-part ln2, a degree-7 Taylor
// polynomial for exp(r), and 2^n applied in two halves so that results that are subnormal or
// overflow come out right (0 / denormal / inf) instead of wrapping in the exponent field.
inline __m256 Exp8(__m256 x) {
  __m256 xc = _mm256_min_ps(_mm256_max_ps(x, Set(-104.0f)), Set(89.0f));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, Set(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, Set(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, Set(-2.12194440e-4f), r);
  __m256 p = Set(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, Set(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, Set(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, Set(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, Set(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, Set(0.5f));
  p = _mm256_fmadd_ps(p, r, Set(1.0f));
  p = _mm256_fmadd_ps(p, r, Set(1.0f));
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i n1 = _mm256_srai_epi32(ni, 1);
  __m256i n2 = _mm256_sub_epi32(ni, n1);
  __m256i bias = _mm256_set1_epi32(127);
  __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 res = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  __m256 is_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_ps(res, x, is_nan);
}

inline __m256 Abs8(__m256 x) { return _mm256_andnot_ps(Set(-0.0f), x); }
inline __m256 SignBits(__m256 x) { return _mm256_and_ps(Set(-0.0f), x); }

// 1 / (1 + exp(-x))
inline __m256 Sigmoid8(__m256 x) {
  __m256 e = Exp8(_mm256_xor_ps(x, Set(-0.0f)));
  return _mm256_div_ps(Set(1.0f), _mm256_add_ps(Set(1.0f), e));
}

// tanh: odd Taylor polynomial (through x^15) for |x| < 0.55 where 1 - 2 / (exp(2|x|) + 1)
// would cancel; that formula elsewhere.
inline __m256 Tanh8(__m256 x) {
  __m256 ax = Abs8(x);
  __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = Set(-1.455834387e-03f);
  p = _mm256_fmadd_ps(p, x2, Set(3.592128037e-03f));
  p = _mm256_fmadd_ps(p, x2, Set(-8.863235530e-03f));
  p = _mm256_fmadd_ps(p, x2, Set(2.186948854e-02f));
  p = _mm256_fmadd_ps(p, x2, Set(-5.396825397e-02f));
  p = _mm256_fmadd_ps(p, x2, Set(1.333333333e-01f));
  p = _mm256_fmadd_ps(p, x2, Set(-3.333333333e-01f));
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, x2), x, x);
  __m256 e = Exp8(_mm256_add_ps(ax, ax));
  __m256 large = _mm256_sub_ps(Set(1.0f), _mm256_div_ps(Set(2.0f), _mm256_add_ps(e, Set(1.0f))));
  large = _mm256_or_ps(large, SignBits(x));
  return _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, Set(0.55f), _CMP_LT_OQ));
}

// erf(x) / x for |x| < 1 as a polynomial in x^2 (Taylor, 11 terms).
inline __m256 ErfSmallOverX8(__m256 x2) {
  __m256 p = Set(1.480719282e-08f);
  p = _mm256_fmadd_ps(p, x2, Set(-1.636584469e-07f));
  p = _mm256_fmadd_ps(p, x2, Set(1.646211437e-06f));
  p = _mm256_fmadd_ps(p, x2, Set(-1.492565036e-05f));
  p = _mm256_fmadd_ps(p, x2, Set(1.205533298e-04f));
  p = _mm256_fmadd_ps(p, x2, Set(-8.548327023e-04f));
  p = _mm256_fmadd_ps(p, x2, Set(5.223977625e-03f));
  p = _mm256_fmadd_ps(p, x2, Set(-2.686617065e-02f));
  p = _mm256_fmadd_ps(p, x2, Set(1.128379167e-01f));
  p = _mm256_fmadd_ps(p, x2, Set(-3.761263890e-01f));
  p = _mm256_fmadd_ps(p, x2, Set(1.128379167e+00f));
  return p;
}

// erfc(a) for a >= 1 given a and exp(-a^2) (computed by the caller as precisely as it can).
inline __m256 ErfcLarge8(__m256 a, __m256 exp_neg_a2) {
  __m256 ac = _mm256_min_ps(a, Set(10.5f));
  __m256 u = _mm256_div_ps(Set(1.0f), ac);
  __m256 s = _mm256_fmadd_ps(u, Set(2.2105263157894735f), Set(-1.210526315789474f));
  __m256 g = Set(2.637855827e-05f);
  g = _mm256_fmadd_ps(g, s, Set(-1.660197129e-05f));
  g = _mm256_fmadd_ps(g, s, Set(-9.356920952e-05f));
  g = _mm256_fmadd_ps(g, s, Set(1.847584060e-04f));
  g = _mm256_fmadd_ps(g, s, Set(-2.247474661e-04f));
  g = _mm256_fmadd_ps(g, s, Set(9.491152934e-05f));
  g = _mm256_fmadd_ps(g, s, Set(9.345310356e-04f));
  g = _mm256_fmadd_ps(g, s, Set(-4.084819777e-03f));
  g = _mm256_fmadd_ps(g, s, Set(9.192813009e-03f));
  g = _mm256_fmadd_ps(g, s, Set(-4.312119802e-03f));
  g = _mm256_fmadd_ps(g, s, Set(-7.687607527e-02f));
  g = _mm256_fmadd_ps(g, s, Set(5.027581546e-01f));
  return _mm256_mul_ps(_mm256_mul_ps(g, u), exp_neg_a2);
}

// exp(-scale * x^2) with x^2 split exactly into hi + lo (FMA), so that the rounding of x^2
// does not get amplified by the exponential. `scale` must be a power of two.
inline __m256 ExpNegScaledSquare8(__m256 x, float scale) {
  __m256 hi = _mm256_mul_ps(x, x);
  __m256 lo = _mm256_fmsub_ps(x, x, hi);
  __m256 e = Exp8(_mm256_mul_ps(hi, Set(-scale)));
  return _mm256_fnmadd_ps(e, _mm256_mul_ps(lo, Set(scale)), e);
}

inline __m256 Erf8(__m256 x) {
  __m256 ax = Abs8(x);
  __m256 small = _mm256_mul_ps(x, ErfSmallOverX8(_mm256_mul_ps(x, x)));
  __m256 axc = _mm256_min_ps(ax, Set(10.5f));
  __m256 erfc = ErfcLarge8(ax, ExpNegScaledSquare8(axc, 1.0f));
  __m256 large = _mm256_or_ps(_mm256_sub_ps(Set(1.0f), erfc), SignBits(x));
  __m256 res = _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, Set(1.0f), _CMP_LT_OQ));
  return _mm256_blendv_ps(res, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// 0.5 x (1 + erf(x / sqrt 2)). 1 + erf(z) is formed without cancellation: erfc(-z) for
// z <= -1, and exp(-z^2) = exp(-x^2 / 2) comes from x directly.
inline __m256 Gelu8(__m256 x) {
  __m256 z = _mm256_mul_ps(x, Set(0.70710678118654752f));
  __m256 az = Abs8(z);
  __m256 small = _mm256_fmadd_ps(z, ErfSmallOverX8(_mm256_mul_ps(z, z)), Set(1.0f));
  __m256 xc = _mm256_min_ps(Abs8(x), Set(14.8f));  // 14.8 / sqrt 2 > 10.5: erfc is 0 there
  __m256 erfc = ErfcLarge8(az, ExpNegScaledSquare8(xc, 0.5f));
  __m256 pos = _mm256_sub_ps(Set(2.0f), erfc);
  __m256 large = _mm256_blendv_ps(erfc, pos, _mm256_cmp_ps(z, Set(0.0f), _CMP_GT_OQ));
  __m256 one_plus_erf =
      _mm256_blendv_ps(large, small, _mm256_cmp_ps(az, Set(1.0f), _CMP_LT_OQ));
  __m256 res = _mm256_mul_ps(_mm256_mul_ps(Set(0.5f), x), one_plus_erf);
  return _mm256_blendv_ps(res, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// 0.5 (1 + tanh(u)) == sigmoid(2u), which does not cancel for negative u.
inline __m256 GeluTanh8(__m256 x) {
  __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  __m256 u = _mm256_mul_ps(Set(0.7978845608028654f), _mm256_fmadd_ps(x3, Set(0.044715f), x));
  return _mm256_mul_ps(x, Sigmoid8(_mm256_add_ps(u, u)));
}

// Applies f to x[0, n) in blocks of 8; the tail goes through a zero-padded block so that every
// element sees the same code path.
template <class F>
inline void Apply(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float buf[8] = {};
    std::memcpy(buf, x + i, sizeof(float) * (n - i));
    _mm256_store_ps(buf, f(_mm256_load_ps(buf)));
    std::memcpy(y + i, buf, sizeof(float) * (n - i));
  }
}

}  // namespace

void ExpArray(const float* x, float* y, int64_t n) { Apply(x, y, n, Exp8); }
void SigmoidArray(const float* x, float* y, int64_t n) { Apply(x, y, n, Sigmoid8); }
void TanhArray(const float* x, float* y, int64_t n) { Apply(x, y, n, Tanh8); }
void ErfArray(const float* x, float* y, int64_t n) { Apply(x, y, n, Erf8); }
void GeluArray(const float* x, float* y, int64_t n) { Apply(x, y, n, Gelu8); }
void GeluTanhArray(const float* x, float* y, int64_t n) { Apply(x, y, n, GeluTanh8); }
void SwishArray(const float* x, float* y, int64_t n, float alpha) {
  const __m256 a = Set(alpha);
  Apply(x, y, n, [a](__m256 v) { return _mm256_mul_ps(v, Sigmoid8(_mm256_mul_ps(a, v))); });
}

}  // namespace nxrt::cpu::elementwise

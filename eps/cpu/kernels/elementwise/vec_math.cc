// AVX2 + FMA float32 approximations of exp, expm1, sigmoid, tanh, erf and the activations built
// on them. Coefficients: Taylor series for exp / expm1 after range reduction, a rational fit of
// erf(x) / x on [0, 3.92] (made for this file with numpy against Python's math.erf), and for
// Gelu the erfc fit of gelu_erfc.h. Measured worst
// relative errors over the float range (normal results): exp 9e-8, sigmoid 1.4e-7, tanh 1.5e-7,
// erf 2.3e-7, gelu 6.7e-7 (both bodies, the negative tail included), mish 3e-7.
#include "kernels/elementwise/vec_math.h"

#include <immintrin.h>

#include <cstring>

#include "common/logistic_avx2.h"
#include "kernels/elementwise/gelu_erfc.h"

namespace nxrt::cpu::elementwise {
namespace {

inline __m256 Set(float v) { return _mm256_set1_ps(v); }

// expm1(x) for x in [-30, 30] (callers clamp): 2^n expm1(r) + (2^n - 1), which keeps full
// relative accuracy near 0 (n == 0) and cancels only mildly elsewhere.
inline __m256 Expm1Clamped8(__m256 x) {
  __m256 n, r;
  Reduce8(x, &n, &r);
  __m256 em1 = _mm256_add_ps(Expm1MinusR8(r), r);
  __m256 s = Pow2(_mm256_cvtps_epi32(n));
  return _mm256_fmadd_ps(s, em1, _mm256_sub_ps(s, Set(1.0f)));
}

inline __m256 Abs8(__m256 x) { return _mm256_andnot_ps(Set(-0.0f), x); }

// tanh(x) = expm1(2x) / (expm1(2x) + 2); |x| is clamped at 9, where tanh rounds to +-1.
inline __m256 Tanh8(__m256 x) {
  __m256 xc = _mm256_min_ps(Set(9.0f), _mm256_max_ps(Set(-9.0f), x));
  __m256 e = Expm1Clamped8(_mm256_add_ps(xc, xc));
  return _mm256_div_ps(e, _mm256_add_ps(e, Set(2.0f)));
}

// erf(x) = x P(t) / Q(t) with t = x^2 / 16, for |x| <= 3.92 (erf rounds to +-1 beyond, so x is
// clamped there), with the (5, 5) rational fit of gelu_erfc.h (kErfP / kErfQ).
inline __m256 ErfRational8(__m256 x) {
  __m256 xc = _mm256_min_ps(Set(3.92f), _mm256_max_ps(Set(-3.92f), x));
  __m256 t = _mm256_mul_ps(_mm256_mul_ps(xc, xc), Set(1.0f / 16.0f));
  namespace g = gelu_erfc;
  __m256 p = Set(g::kErfP[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, t, Set(g::kErfP[i]));
  __m256 q = Set(g::kErfQ[0]);
  for (int i = 1; i < 6; ++i) q = _mm256_fmadd_ps(q, t, Set(g::kErfQ[i]));
  return _mm256_div_ps(_mm256_mul_ps(xc, p), q);
}

inline __m256 Erf8(__m256 x) { return ErfRational8(x); }

// 0.5 x (1 + erf(x / sqrt 2)) by gelu_erfc.h's formula, accurate for every x.
inline __m256 GeluErfc8(__m256 x) {
  namespace g = gelu_erfc;
  const __m256 ax = _mm256_min_ps(Abs8(x), Set(g::kGeluClamp));  // min(NaN, c) is c: x keeps NaN
  const __m256 d = _mm256_fmadd_ps(ax, Set(0.35355339059327376f), Set(1.0f));  // 1 + a / 2
  __m256 t = _mm256_rcp_ps(d);
  t = _mm256_fmadd_ps(t, _mm256_fnmadd_ps(d, t, Set(1.0f)), t);  // one Newton step: ~23 bits
  const __m256 s = _mm256_fmsub_ps(t, Set(g::kK1), Set(g::kK2));
  __m256 p = Set(g::kP[0]);
  for (int i = 1; i < 10; ++i) p = _mm256_fmadd_ps(p, s, Set(g::kP[i]));
  // exp(P - x^2 / 2) with x^2 = hi + lo exactly; n * ln2 taken off -hi / 2 exactly.
  const __m256 hi = _mm256_mul_ps(ax, ax);
  const __m256 lo = _mm256_fmsub_ps(ax, ax, hi);
  const __m256 mh = _mm256_mul_ps(hi, Set(-0.5f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(_mm256_add_ps(mh, p), Set(g::kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, Set(g::kLn2Hi), mh);
  r = _mm256_fnmadd_ps(n, Set(g::kLn2Lo), r);
  r = _mm256_fnmadd_ps(lo, Set(0.5f), _mm256_add_ps(r, p));
  const __m256 e = _mm256_add_ps(_mm256_add_ps(Expm1MinusR8(r), r), Set(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);  // down to -160: 2^n in two halves, as in Exp8
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256 half_t = _mm256_mul_ps(t, Set(0.5f));
  const __m256 h = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(e, half_t), Pow2(n1)),
                                 Pow2(_mm256_sub_epi32(ni, n1)));  // erfc(a) / 2
  const __m256 positive = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ);
  const __m256 res = _mm256_mul_ps(x, _mm256_blendv_ps(h, _mm256_sub_ps(Set(1.0f), h), positive));
  // Below -kGeluClamp the result is 0 in float (and -inf * 0 would be NaN).
  return _mm256_andnot_ps(_mm256_cmp_ps(x, Set(-g::kGeluClamp), _CMP_LT_OQ), res);
}

// Gelu: a vector with no lane at or below -1.25 (z = x / sqrt 2 > -0.88, where 1 + erf(z) keeps
// its digits) takes the cheaper erf form, about half the work; others the erfc formula.
inline __m256 Gelu8(__m256 x) {
  const __m256 tail = _mm256_cmp_ps(x, Set(-1.25f), _CMP_LE_OQ);
  if (_mm256_movemask_ps(tail) != 0) return GeluErfc8(x);
  const __m256 z = _mm256_mul_ps(x, Set(0.70710678118654752f));
  return _mm256_mul_ps(_mm256_mul_ps(Set(0.5f), x), _mm256_add_ps(Set(1.0f), ErfRational8(z)));
}

// 0.5 (1 + tanh(u)) == sigmoid(2u), which does not cancel for negative u.
inline __m256 GeluTanh8(__m256 x) {
  __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  __m256 u = _mm256_mul_ps(Set(0.7978845608028654f), _mm256_fmadd_ps(x3, Set(0.044715f), x));
  return _mm256_mul_ps(x, Sigmoid8(_mm256_add_ps(u, u)));
}

// x tanh(softplus(x)) = x n / (n + 2) with n = e^x (e^x + 2), which follows from
// tanh(log(1 + e^x)) = ((1 + e^x)^2 - 1) / ((1 + e^x)^2 + 1); for x > 20 the result is x.
inline __m256 Mish8(__m256 x) {
  __m256 e = Exp8(_mm256_min_ps(x, Set(20.0f)));
  __m256 n = _mm256_mul_ps(e, _mm256_add_ps(e, Set(2.0f)));
  __m256 r = _mm256_div_ps(_mm256_mul_ps(x, n), _mm256_add_ps(n, Set(2.0f)));
  return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, Set(20.0f), _CMP_GT_OQ));
}

// Applies f to x[0, n) in blocks of 8; the tail goes through a zero-padded block so that every
// element sees the same code path.
template <class F>
inline void Apply(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  // Two independent vectors per iteration and a software prefetch a few cache lines ahead keep
  // the long dependency chains from stalling the memory stream on large arrays.
  for (; i + 16 <= n; i += 16) {
    _mm_prefetch(reinterpret_cast<const char*>(x + i + 512), _MM_HINT_T0);
    __m256 a = f(_mm256_loadu_ps(x + i));
    __m256 b = f(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
  }
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
void SigmoidArrayAvx2(const float* x, float* y, int64_t n) { Apply(x, y, n, Sigmoid8); }

bool VecMathHasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") != 0;
  return has;
}

void SigmoidArray(const float* x, float* y, int64_t n) {
  if (VecMathHasAvx512()) return SigmoidArrayAvx512(x, y, n);
  SigmoidArrayAvx2(x, y, n);
}
void TanhArray(const float* x, float* y, int64_t n) { Apply(x, y, n, Tanh8); }
void ErfArray(const float* x, float* y, int64_t n) { Apply(x, y, n, Erf8); }
void GeluArrayAvx2(const float* x, float* y, int64_t n) { Apply(x, y, n, Gelu8); }
void GeluArray(const float* x, float* y, int64_t n) {
  if (VecMathHasAvx512()) return GeluArrayAvx512(x, y, n);
  GeluArrayAvx2(x, y, n);
}
void GeluRows(float* p, int64_t ld, int64_t rows, int64_t cols) {
  if (VecMathHasAvx512()) return GeluRowsAvx512(p, ld, rows, cols);
  for (int64_t r = 0; r < rows; ++r, p += ld) {
    int64_t i = 0;
    for (; i + 8 <= cols; i += 8) _mm256_storeu_ps(p + i, Gelu8(_mm256_loadu_ps(p + i)));
    if (i < cols) Apply(p + i, p + i, cols - i, Gelu8);
  }
}
void GeluTanhArray(const float* x, float* y, int64_t n) { Apply(x, y, n, GeluTanh8); }
void MishArray(const float* x, float* y, int64_t n) { Apply(x, y, n, Mish8); }
void SwishArrayAvx2(const float* x, float* y, int64_t n, float alpha) {
  const __m256 a = Set(alpha);
  Apply(x, y, n, [a](__m256 v) { return _mm256_mul_ps(v, Sigmoid8(_mm256_mul_ps(a, v))); });
}

void SwishArray(const float* x, float* y, int64_t n, float alpha) {
  if (VecMathHasAvx512()) return SwishArrayAvx512(x, y, n, alpha);
  SwishArrayAvx2(x, y, n, alpha);
}

}  // namespace nxrt::cpu::elementwise

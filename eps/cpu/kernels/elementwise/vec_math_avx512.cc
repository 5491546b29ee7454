// AVX-512 bodies of the logistic functions of vec_math.h (sigmoid, and swish x * sigmoid(a x),
// EfficientNet's activation, a fifth of that model's time with the AVX2 bodies) and of Gelu
// (gelu_erfc.h: the same formula as the AVX2 body, 16 lanes, 2^n by vscalefps). Built with the
// AVX-512 flags (CMakeLists.txt) and called only when the CPU has them (vec_math.cc).
//
// Written for speed without giving up accuracy (about 1e-7 relative, like the AVX2 bodies):
// - sigmoid from e = exp(-|x|), which never overflows: s = 1 / (1 + e) for x >= 0, e * s below;
// - 2^n applied with vscalefps, which rounds to subnormals and 0 correctly in one instruction;
// - the division as a 14-bit reciprocal estimate and one Newton step (1 + e lies in (1, 2], so
//   the estimate is never near 0 or inf), a fraction of vdivps's cost.
#include <immintrin.h>

#include <cstdint>

#include "common/logistic_avx512.h"
#include "kernels/elementwise/gelu_erfc.h"
#include "kernels/elementwise/vec_math.h"

namespace nxrt::cpu::elementwise {
namespace {

inline __m512 Set(float v) { return _mm512_set1_ps(v); }

template <class F>
inline void Apply16(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // two independent vectors per iteration
    const __m512 a = f(_mm512_loadu_ps(x + i));
    const __m512 b = f(_mm512_loadu_ps(x + i + 16));
    _mm512_storeu_ps(y + i, a);
    _mm512_storeu_ps(y + i + 16, b);
  }
  for (; i < n; i += 16) {  // the tail under a mask: masked-off lanes read and write nothing
    const __mmask16 m =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// 0.5 x (1 + erf(x / sqrt 2)): gelu_erfc.h's formula, step for step as GeluErfc8 in vec_math.cc.
inline __m512 GeluErfc16(__m512 x) {
  namespace g = gelu_erfc;
  const __m512 ax = _mm512_maskz_min_ps(kAllLanes16, _mm512_abs_ps(x), Set(g::kGeluClamp));
  const __m512 d = _mm512_fmadd_ps(ax, Set(0.35355339059327376f), Set(1.0f));  // 1 + a / 2
  __m512 t = _mm512_maskz_rcp14_ps(kAllLanes16, d);
  t = _mm512_fmadd_ps(t, _mm512_fnmadd_ps(d, t, Set(1.0f)), t);  // one Newton step
  const __m512 s = _mm512_fmsub_ps(t, Set(g::kK1), Set(g::kK2));
  __m512 p = Set(g::kP[0]);
  for (int i = 1; i < 10; ++i) p = _mm512_fmadd_ps(p, s, Set(g::kP[i]));
  const __m512 hi = _mm512_mul_ps(ax, ax);
  const __m512 lo = _mm512_fmsub_ps(ax, ax, hi);
  const __m512 mh = _mm512_mul_ps(hi, Set(-0.5f));
  const __m512 n =
      _mm512_maskz_roundscale_ps(kAllLanes16, _mm512_mul_ps(_mm512_add_ps(mh, p), Set(g::kLog2e)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, Set(g::kLn2Hi), mh);
  r = _mm512_fnmadd_ps(n, Set(g::kLn2Lo), r);
  r = _mm512_fnmadd_ps(lo, Set(0.5f), _mm512_add_ps(r, p));
  const __m512 e = ExpReduced16(r);
  const __m512 h =
      _mm512_maskz_scalef_ps(kAllLanes16, _mm512_mul_ps(e, _mm512_mul_ps(t, Set(0.5f))),
                             n);  // erfc(a) / 2
  const __mmask16 positive = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
  const __m512 f = _mm512_mask_sub_ps(h, positive, Set(1.0f), h);
  // Below -kGeluClamp the result is 0 in float (and -inf * 0 would be NaN).
  const __mmask16 keep = _mm512_cmp_ps_mask(x, Set(-g::kGeluClamp), _CMP_NLT_UQ);
  return _mm512_maskz_mul_ps(keep, x, f);
}

// erf(x) for |x| <= 3.92 (clamped beyond, where erf rounds to +-1) as x P(t) / Q(t), t = x^2 / 16:
// gelu_erfc.h's rational fit (as ErfRational8 in vec_math.cc), with the division as a reciprocal
// estimate and one Newton step (Q lies in [1, 4e4]).
inline __m512 ErfRational16(__m512 x) {
  const __m512 xc = _mm512_maskz_min_ps(kAllLanes16, Set(3.92f),
                                        _mm512_maskz_max_ps(kAllLanes16, Set(-3.92f), x));
  const __m512 t = _mm512_mul_ps(_mm512_mul_ps(xc, xc), Set(1.0f / 16.0f));
  namespace g = gelu_erfc;
  __m512 p = Set(g::kErfP[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, t, Set(g::kErfP[i]));
  __m512 q = Set(g::kErfQ[0]);
  for (int i = 1; i < 6; ++i) q = _mm512_fmadd_ps(q, t, Set(g::kErfQ[i]));
  __m512 rq = _mm512_maskz_rcp14_ps(kAllLanes16, q);
  rq = _mm512_fmadd_ps(rq, _mm512_fnmadd_ps(q, rq, Set(1.0f)), rq);
  return _mm512_mul_ps(_mm512_mul_ps(xc, p), rq);
}

// As Gelu8: vectors with no lane at or below -1.25 take the erf form, the others the erfc one.
inline __m512 Gelu16(__m512 x) {
  if (_mm512_cmp_ps_mask(x, Set(-1.25f), _CMP_LE_OQ) != 0) return GeluErfc16(x);
  const __m512 z = _mm512_mul_ps(x, Set(0.70710678118654752f));
  return _mm512_mul_ps(_mm512_mul_ps(Set(0.5f), x), _mm512_add_ps(Set(1.0f), ErfRational16(z)));
}

}  // namespace

void GeluArrayAvx512(const float* x, float* y, int64_t n) { Apply16(x, y, n, Gelu16); }

void GeluRowsAvx512(float* p, int64_t ld, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r, p += ld) Apply16(p, p, cols, Gelu16);
}

void SigmoidArrayAvx512(const float* x, float* y, int64_t n) { Apply16(x, y, n, Sigmoid16); }

void SwishArrayAvx512(const float* x, float* y, int64_t n, float alpha) {
  const __m512 a = Set(alpha);
  Apply16(x, y, n, [a](__m512 v) { return _mm512_mul_ps(v, Sigmoid16(_mm512_mul_ps(a, v))); });
}

}  // namespace nxrt::cpu::elementwise

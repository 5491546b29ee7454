// AVX-512 (16 floats): the float vector operations the CPU EP's hand-written bodies are written
// against (depthwise_2d_body.h, pool_2d.h), as a traits class: kLanes, Vec, Mask, Lanes(lo, hi)
// (the mask of lanes [lo, hi), any integers), loads and stores (StoreFirst stores the first n
// lanes), arithmetic, and lane shuffles for stride 2.
//
// Include it only from a file built for AVX-512 (*_avx512.cc). The struct sits in an unnamed
// namespace on purpose: every body instantiated on it stays local to its file, so the linker can
// never pick an AVX-512 copy of a shared template for an AVX2 caller.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "common/logistic_avx512.h"

namespace nxrt::cpu {
namespace {

struct Avx512 {
  static constexpr int kLanes = 16;
  using Vec = __m512;
  using Mask = __mmask16;
  static Mask Lanes(int64_t lo, int64_t hi) {
    const int64_t l = std::clamp<int64_t>(lo, 0, kLanes), h = std::clamp<int64_t>(hi, 0, kLanes);
    if (h <= l) return 0;
    return static_cast<Mask>(((1u << h) - 1u) & ~((1u << l) - 1u));
  }
  static Vec Load(const float* p) { return _mm512_loadu_ps(p); }
  static Vec LoadMasked(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  // Masked loads are single instructions here: bodies need no page checks (simd_avx2.h).
  static constexpr bool kSlowMaskedLoads = false;
  static Vec LoadAnd(const float* p, Mask m) { return LoadMasked(p, m); }
  static void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static void StoreFirst(float* p, Vec v, int64_t, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static Vec Set1(float v) { return _mm512_set1_ps(v); }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec Add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static float ReduceAdd(Vec v) { return _mm512_reduce_add_ps(v); }
  static Vec Mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec Div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
  // vmaxps returns its second operand unless the first is greater (NaN compares false).
  // Written with a full mask: GCC 12's _mm512_max_ps trips -Wmaybe-uninitialized on its
  // undefined pass-through operand; this is the same unmasked vmaxps. (The same for the
  // permute below.)
  static Vec Max(Vec a, Vec b) { return _mm512_maskz_max_ps(static_cast<Mask>(0xffff), a, b); }
  static Vec Min(Vec a, Vec b) { return _mm512_maskz_min_ps(static_cast<Mask>(0xffff), a, b); }
  static Vec MaskedMax(Vec acc, Mask m, Vec v) { return _mm512_mask_max_ps(acc, m, v, acc); }
  // 1 / (1 + exp(-x)), accurate to about 1e-7 relative (common/logistic_avx512.h).
  static Vec Sigmoid(Vec x) { return Sigmoid16(x); }
  static Vec Even(Vec a, Vec b) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(a, even, b);
  }
  // The even / odd lanes of a:b inside each 128-bit lane ([a0 a2 b0 b2 | a4 a6 b4 b6 | ...]);
  // InLaneOrder then gathers the 64-bit pairs of a before those of b.
  static Vec EvenInLanes(Vec a, Vec b) { return _mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); }
  static Vec OddInLanes(Vec a, Vec b) { return _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)); }
  static Vec InLaneOrder(Vec t) {
    const __m512i order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    const __m512d d = _mm512_castps_pd(t);
    return _mm512_castpd_ps(_mm512_permutex2var_pd(d, order, d));  // (no undefined operand)
  }
};

}  // namespace
}  // namespace nxrt::cpu

// AVX2 (8 floats): the float vector operations the CPU EP's hand-written bodies are written against
// (depthwise_2d_body.h, pool_2d.h), as a traits class: kLanes, Vec, Mask, Lanes(lo, hi) (the mask
// of lanes [lo, hi), any integers), loads and stores (StoreFirst stores the first n lanes),
// arithmetic, and lane shuffles for stride 2.
//
// Include it only from a file built for AVX2 + FMA (every EP file). The struct sits in an unnamed
// namespace on purpose: every body instantiated on it stays local to its file, so the linker can
// never pick an AVX-512 copy of a shared template for an AVX2 caller.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "common/logistic_avx2.h"

// Under AddressSanitizer, LoadAnd keeps vmaskmovps: the faster form reads whole vectors that may
// reach past a buffer (harmless inside one page), which ASan would report.
#if defined(__SANITIZE_ADDRESS__)
#define NXRT_SIMD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NXRT_SIMD_ASAN 1
#endif
#endif
#ifndef NXRT_SIMD_ASAN
#define NXRT_SIMD_ASAN 0
#endif

namespace nxrt::cpu {
namespace {

struct Avx2 {
  static constexpr int kLanes = 8;
  using Vec = __m256;
  using Mask = __m256i;
  static Mask Lanes(int64_t lo, int64_t hi) {
    // Clamped first: the lane indices are 32-bit.
    const int l = static_cast<int>(std::clamp<int64_t>(lo, -1, kLanes + 1));
    const int h = static_cast<int>(std::clamp<int64_t>(hi, -1, kLanes + 1));
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(l - 1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32(h), idx));
  }
  static Vec Load(const float* p) { return _mm256_loadu_ps(p); }
  // vmaskmovps loads run as microcode on AMD Zen 1/2: measured 3x slower than an unmasked load
  // and an and (10+ cycles each), 2/3 of a stride-2 depthwise conv's time. Bodies with many
  // masked loads check once per row that its reads stay in one page and use LoadAnd.
  static constexpr bool kSlowMaskedLoads = true;
  // True when the floats [first, last] lie in one 4 KiB page. A full vector load anywhere in such
  // a span cannot fault if the span holds one float the caller may read.
  static bool InOnePage(const float* first, const float* last) {
    return (reinterpret_cast<uintptr_t>(first) >> 12) == (reinterpret_cast<uintptr_t>(last) >> 12);
  }
  // LoadMasked for a p whose 32 bytes InOnePage vouched for: a plain load, masked-off lanes
  // cleared (they may hold bytes past the tensor, even NaNs; the and makes them +0).
  static Vec LoadAnd(const float* p, Mask m) {
#if NXRT_SIMD_ASAN
    return _mm256_maskload_ps(p, m);  // AddressSanitizer then checks exactly the lanes read
#else
    return _mm256_and_ps(_mm256_loadu_ps(p), _mm256_castsi256_ps(m));
#endif
  }
  // Masked-off lanes read as 0 and touch no memory. Only a load that straddles a page (1 in 128
  // addresses) or has no lane takes the microcoded vmaskmovps.
  static Vec LoadMasked(const float* p, Mask m) {
    if (InOnePage(p, p + kLanes - 1) && _mm256_movemask_ps(_mm256_castsi256_ps(m)) != 0) {
      return LoadAnd(p, m);
    }
    return _mm256_maskload_ps(p, m);
  }
  static void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static void StoreFirst(float* p, Vec v, int64_t n, Mask) {
    if (n == kLanes) return Store(p, v);
    // Not vmaskmovps: AMD runs its store form as a slow microcode sequence (measured 3x
    // slower than this on MaxPools with 13-wide rows on Zen 4).
    alignas(32) float lanes[kLanes];
    _mm256_store_ps(lanes, v);
    for (int64_t i = 0; i < n; ++i) p[i] = lanes[i];
  }
  static Vec Set1(float v) { return _mm256_set1_ps(v); }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec Add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static float ReduceAdd(Vec v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  static Vec Mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec Div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
  // vmaxps returns its second operand unless the first is greater (NaN compares false).
  static Vec Max(Vec a, Vec b) { return _mm256_max_ps(a, b); }
  static Vec Min(Vec a, Vec b) { return _mm256_min_ps(a, b); }  // the same NaN rule
  static Vec MaskedMax(Vec acc, Mask m, Vec v) {
    return _mm256_blendv_ps(acc, _mm256_max_ps(v, acc), _mm256_castsi256_ps(m));
  }
  // The even / odd lanes of a:b, in the order [a0 a2 b0 b2 | a4 a6 b4 b6] that stays inside
  // 128-bit lanes; InLaneOrder then swaps the middle 64-bit pairs.
  static Vec EvenInLanes(Vec a, Vec b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); }
  static Vec OddInLanes(Vec a, Vec b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)); }
  static Vec InLaneOrder(Vec t) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // 1 / (1 + exp(-x)), accurate to about 1e-7 relative (common/logistic_avx2.h).
  static Vec Sigmoid(Vec x) { return Sigmoid8(x); }
  static Vec Even(Vec a, Vec b) { return InLaneOrder(EvenInLanes(a, b)); }
};

}  // namespace
}  // namespace nxrt::cpu

// Bulk conversions between float and the 16-bit float types, vectorised with F16C (half) and
// AVX2 integer ops (bfloat16). Used to run the float32 fast paths on 16-bit data block by block.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "common/half.h"

namespace nxrt::cpu::elementwise {

inline void ToFloat(const Half* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) y[i] = Half::ToFloat(x[i].bits);
}

inline void FromFloat(const float* x, Half* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i].bits = Half::FromFloat(x[i]);
}

inline void ToFloat(const BFloat16* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Float32FromBits(static_cast<uint32_t>(x[i].bits) << 16);
}

inline void FromFloat(const float* x, BFloat16* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i].bits = BFloat16::FromFloat(x[i]);
}

inline void ToFloat(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}
inline void FromFloat(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}

// Runs a float array function f(const float*, float*, count) over 16-bit data through a small
// float buffer on the stack.
template <class T, class F>
inline void ViaFloatBlocks(const T* x, T* y, int64_t n, const F& f) {
  constexpr int64_t kBlock = 512;
  alignas(32) float buf[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    int64_t m = n - i < kBlock ? n - i : kBlock;
    ToFloat(x + i, buf, m);
    f(buf, buf, m);
    FromFloat(buf, y + i, m);
  }
}

}  // namespace nxrt::cpu::elementwise

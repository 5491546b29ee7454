// Bulk conversions between 16-bit float storage types and float32, for the kernels that compute
// float16/bfloat16 by running the float32 path.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {

template <class T>
void ToFloat(const T* src, size_t n, float* dst) {
  size_t i = 0;
  if constexpr (std::is_same_v<T, Half>) {
    // F16C converts 8 halves per instruction; the scalar loop handles the tail.
    for (; i + 8 <= n; i += 8) {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
  }
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

template <class T>
void FromFloat(const float* src, size_t n, T* dst) {
  // Conversion back goes through the shared rounding (round to nearest even, NaN/Inf kept).
  for (size_t i = 0; i < n; ++i) dst[i] = T(src[i]);
}

template <class T>
std::vector<float> ToFloatVector(const T* src, size_t n) {
  std::vector<float> out(n);
  ToFloat(src, n, out.data());
  return out;
}

// Converted copy in a per-thread scratch slot (valid until the slot is requested again).
template <class T>
float* ToFloatScratch(const T* src, size_t n, ScratchSlot slot) {
  float* dst = static_cast<float*>(ThreadScratch(slot, n * sizeof(float)));
  ToFloat(src, n, dst);
  return dst;
}

}  // namespace nxrt::cpu::linalg

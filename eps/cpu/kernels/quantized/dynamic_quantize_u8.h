// Vector loops of onnxruntime-style dynamic uint8 quantization (DynamicQuantizeLinear and the
// activations of DynamicQuantizeMatMul): the range of the data and q = saturate(round(x / scale)
// + zp) over [0, 255]. Each gives the same results as the scalar loop it replaced, NaN included:
// minps/maxps return their second operand when either is NaN, so a NaN input never changes the
// range and a NaN quotient saturates to 0.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace nxrt::cpu::quantized {

// mn = min(mn, x[i]), mx = max(mx, x[i]) over i < n, ignoring NaN (as `x < mn ? x : mn`).
inline void UpdateRange(const float* x, int64_t n, float& mn, float& mx) {
  __m256 vmin = _mm256_set1_ps(mn), vmax = _mm256_set1_ps(mx);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    vmin = _mm256_min_ps(v, vmin);
    vmax = _mm256_max_ps(v, vmax);
  }
  alignas(32) float lo[8], hi[8];
  _mm256_store_ps(lo, vmin);
  _mm256_store_ps(hi, vmax);
  for (int l = 0; l < 8; ++l) {
    mn = lo[l] < mn ? lo[l] : mn;
    mx = hi[l] > mx ? hi[l] : mx;
  }
  for (; i < n; ++i) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
}

// One value: round half to even, add the zero point, NaN -> 0, clamp to [0, 255].
inline int32_t QuantizeU8Value(float x, float scale, float zp) {
  const float v = std::nearbyint(x / scale) + zp;
  if (std::isnan(v)) return 0;
  return static_cast<int32_t>(v < 0.f ? 0.f : (v > 255.f ? 255.f : v));
}

// Eight values as int32 lanes, exactly as QuantizeU8Value.
inline __m256i QuantizeU8x8(__m256 x, __m256 scale, __m256 zp) {
  __m256 v =
      _mm256_round_ps(_mm256_div_ps(x, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm256_max_ps(_mm256_add_ps(v, zp), _mm256_setzero_ps());  // NaN -> 0
  return _mm256_cvttps_epi32(_mm256_min_ps(v, _mm256_set1_ps(255.f)));
}

// y[i] = QuantizeU8Value(x[i], scale, zp) for i < n.
inline void QuantizeU8(const float* x, int64_t n, float scale, float zp, uint8_t* y) {
  const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps(zp);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i q0 = QuantizeU8x8(_mm256_loadu_ps(x + i), vs, vz);
    const __m256i q1 = QuantizeU8x8(_mm256_loadu_ps(x + i + 8), vs, vz);
    const __m256i q2 = QuantizeU8x8(_mm256_loadu_ps(x + i + 16), vs, vz);
    const __m256i q3 = QuantizeU8x8(_mm256_loadu_ps(x + i + 24), vs, vz);
    // Packs interleave the 128-bit halves; the final permute puts the 32 bytes in order.
    const __m256i w01 = _mm256_packs_epi32(q0, q1), w23 = _mm256_packs_epi32(q2, q3);
    const __m256i b = _mm256_packus_epi16(w01, w23);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  for (; i < n; ++i) y[i] = static_cast<uint8_t>(QuantizeU8Value(x[i], scale, zp));
}

}  // namespace nxrt::cpu::quantized

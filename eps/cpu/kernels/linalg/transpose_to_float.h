// Weight transposition for the pre-packings: a [rows, cols] float/float16/bfloat16 matrix stored
// as its float32 transpose, [cols, rows]. Creation-time work, but for a large model (ViT-B/16:
// 86 M weights) it is a sizeable part of creating a session, so it runs near memory speed.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/linalg/float_convert.h"

namespace nxrt::cpu::linalg {

// Transposes the 8x8 float block at `s` (row stride `ss`) into `d` (row stride `ds`) in registers:
// eight row loads, three rounds of lane shuffles, eight column stores.
inline void Transpose8x8(const float* s, int64_t ss, float* d, int64_t ds) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * ss);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    for (int j = 0; j < 2; ++j) {
      r[i + j] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], _MM_SHUFFLE(1, 0, 1, 0));
      r[i + j + 2] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], _MM_SHUFFLE(3, 2, 3, 2));
    }
  }
  // r[0..3] hold rows 0-3's columns {0,4},{2,6},{1,5},{3,7} per 128-bit half; r[4..7] rows 4-7.
  constexpr int kColumnOf[4] = {0, 2, 1, 3};
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(d + kColumnOf[i] * ds, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(d + (kColumnOf[i] + 4) * ds, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// dst[c * rows + r] = float(src[r * cols + c]): a [rows, cols] matrix transposed to [cols, rows]
// in float32. Bands of 8 rows are transposed 8x8 in registers (the scalar element loop ran at a
// quarter of memory speed and was most of ViT-B/16's session creation); 16-bit sources are
// converted one band at a time (vectorised) first.
template <class T>
void TransposeToFloat(const T* src, int64_t rows, int64_t cols, float* dst) {
  constexpr int64_t kBand = 8;
  std::vector<float> band;
  for (int64_t r0 = 0; r0 < rows; r0 += kBand) {
    const int64_t r1 = std::min(rows, r0 + kBand);
    const float* s;
    if constexpr (std::is_same_v<T, float>) {
      s = src + r0 * cols;
    } else {
      band.resize(static_cast<size_t>((r1 - r0) * cols));
      ToFloat(src + r0 * cols, band.size(), band.data());
      s = band.data();
    }
    int64_t c0 = 0;
    if (r1 - r0 == kBand) {
      for (; c0 + 8 <= cols; c0 += 8) Transpose8x8(s + c0, cols, dst + c0 * rows + r0, rows);
    }
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < cols; ++c) dst[c * rows + r] = s[(r - r0) * cols + c];
  }
}

}  // namespace nxrt::cpu::linalg

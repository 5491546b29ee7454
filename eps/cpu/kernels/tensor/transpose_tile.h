// Cache-tile transpose used by StridedCopy's transpose path:
//   d[i * d_stride + j] = s[i + j * s_stride]   for i < ni, j < nj
// Full 8x8 (4x4 for 64-bit) blocks of 16/32/64-bit elements go through SIMD register
// transposes; the ragged edges and other element sizes use the scalar loop.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace nxrt::cpu::tensor {

// Elements per side of the SIMD block for T (0: scalar only).
template <class T>
constexpr int64_t kMicroBlock =
#if defined(__AVX__)
    (std::is_same_v<T, uint32_t>   ? 8
     : std::is_same_v<T, uint64_t> ? 4
                                   : 0) +
#endif
#if defined(__SSE2__)
    (std::is_same_v<T, uint16_t> ? 8 : 0) +
#endif
    0;

// Transposes one micro block: row r of the source (r = j offset, elements along i) becomes
// column r of the destination.
template <class T>
inline void MicroTranspose(const T* s, int64_t ss, T* d, int64_t ds) {
#if defined(__AVX__)
  if constexpr (std::is_same_v<T, uint32_t>) {
    auto ld = [&](int r) { return _mm256_loadu_ps(reinterpret_cast<const float*>(s + r * ss)); };
    __m256 r0 = ld(0), r1 = ld(1), r2 = ld(2), r3 = ld(3), r4 = ld(4), r5 = ld(5), r6 = ld(6),
           r7 = ld(7);
    // Interleave pairs of rows, then pairs of pairs within each 128-bit lane...
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    // ...then join the low lanes (columns 0-3) and the high lanes (columns 4-7).
    auto st = [&](int c, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(d + c * ds), v); };
    st(0, _mm256_permute2f128_ps(u0, u4, 0x20));
    st(1, _mm256_permute2f128_ps(u1, u5, 0x20));
    st(2, _mm256_permute2f128_ps(u2, u6, 0x20));
    st(3, _mm256_permute2f128_ps(u3, u7, 0x20));
    st(4, _mm256_permute2f128_ps(u0, u4, 0x31));
    st(5, _mm256_permute2f128_ps(u1, u5, 0x31));
    st(6, _mm256_permute2f128_ps(u2, u6, 0x31));
    st(7, _mm256_permute2f128_ps(u3, u7, 0x31));
    return;
  }
  if constexpr (std::is_same_v<T, uint64_t>) {
    auto ld = [&](int r) { return _mm256_loadu_pd(reinterpret_cast<const double*>(s + r * ss)); };
    __m256d r0 = ld(0), r1 = ld(1), r2 = ld(2), r3 = ld(3);
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    auto st = [&](int c, __m256d v) { _mm256_storeu_pd(reinterpret_cast<double*>(d + c * ds), v); };
    st(0, _mm256_permute2f128_pd(t0, t2, 0x20));
    st(1, _mm256_permute2f128_pd(t1, t3, 0x20));
    st(2, _mm256_permute2f128_pd(t0, t2, 0x31));
    st(3, _mm256_permute2f128_pd(t1, t3, 0x31));
    return;
  }
#endif
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, uint16_t>) {
    auto ld = [&](int r) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + r * ss)); };
    __m128i r0 = ld(0), r1 = ld(1), r2 = ld(2), r3 = ld(3), r4 = ld(4), r5 = ld(5), r6 = ld(6),
            r7 = ld(7);
    // 16-bit, 32-bit, then 64-bit interleaves build the columns.
    __m128i t0 = _mm_unpacklo_epi16(r0, r1), t1 = _mm_unpackhi_epi16(r0, r1);
    __m128i t2 = _mm_unpacklo_epi16(r2, r3), t3 = _mm_unpackhi_epi16(r2, r3);
    __m128i t4 = _mm_unpacklo_epi16(r4, r5), t5 = _mm_unpackhi_epi16(r4, r5);
    __m128i t6 = _mm_unpacklo_epi16(r6, r7), t7 = _mm_unpackhi_epi16(r6, r7);
    __m128i u0 = _mm_unpacklo_epi32(t0, t2), u1 = _mm_unpackhi_epi32(t0, t2);
    __m128i u2 = _mm_unpacklo_epi32(t1, t3), u3 = _mm_unpackhi_epi32(t1, t3);
    __m128i u4 = _mm_unpacklo_epi32(t4, t6), u5 = _mm_unpackhi_epi32(t4, t6);
    __m128i u6 = _mm_unpacklo_epi32(t5, t7), u7 = _mm_unpackhi_epi32(t5, t7);
    auto st = [&](int c, __m128i v) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + c * ds), v);
    };
    st(0, _mm_unpacklo_epi64(u0, u4));
    st(1, _mm_unpackhi_epi64(u0, u4));
    st(2, _mm_unpacklo_epi64(u1, u5));
    st(3, _mm_unpackhi_epi64(u1, u5));
    st(4, _mm_unpacklo_epi64(u2, u6));
    st(5, _mm_unpackhi_epi64(u2, u6));
    st(6, _mm_unpacklo_epi64(u3, u7));
    st(7, _mm_unpackhi_epi64(u3, u7));
    return;
  }
#endif
  (void)s, (void)ss, (void)d, (void)ds;
}

template <class T>
inline void TransposeTile(const T* s, int64_t s_stride, T* d, int64_t d_stride, int64_t ni,
                          int64_t nj) {
  int64_t i = 0;
  constexpr int64_t M = kMicroBlock<T>;
  if constexpr (M > 0) {
    for (; i + M <= ni; i += M) {
      int64_t j = 0;
      for (; j + M <= nj; j += M)
        MicroTranspose<T>(s + i + j * s_stride, s_stride, d + i * d_stride + j, d_stride);
      for (; j < nj; ++j)
        for (int64_t ii = i; ii < i + M; ++ii) d[ii * d_stride + j] = s[ii + j * s_stride];
    }
  }
  for (; i < ni; ++i)
    for (int64_t j = 0; j < nj; ++j) d[i * d_stride + j] = s[i + j * s_stride];
}

}  // namespace nxrt::cpu::tensor

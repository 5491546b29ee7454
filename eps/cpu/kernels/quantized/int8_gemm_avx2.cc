// AVX2 micro-kernel of the 8-bit product (int8_gemm_core.h): a tile of up to 6 rows x 16 columns
// in 12 ymm int32 accumulators. Per pair of k: two loads of B (16 columns x 2 int16), one
// broadcast of each row's (a[k], a[k+1]) as an int32, and vpmaddwd + vpaddd per accumulator.
#include <immintrin.h>

#include <cstring>

#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::quantized {
namespace {

template <int MR>
void Tile(const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs, int32_t* c,
          bool accumulate) {
  __m256i lo[MR], hi[MR];
  // Unrolled, so the accumulators live in registers.
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    if (accumulate) {
      lo[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + r * 16));
      hi[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + r * 16 + 8));
    } else {
      lo[r] = _mm256_setzero_si256();
      hi[r] = _mm256_setzero_si256();
    }
  }
  for (int64_t g = 0; g < pairs; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + g * 32));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + g * 32 + 16));
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * lda + 2 * g, sizeof(pair));
      const __m256i av = _mm256_set1_epi32(pair);
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(av, b0));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(av, b1));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 16), lo[r]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 16 + 8), hi[r]);
  }
}

}  // namespace

void Int8TileAvx2(int mr, const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs,
                  int32_t* c, bool accumulate) {
  switch (mr) {
    case 1:
      return Tile<1>(a, lda, b, pairs, c, accumulate);
    case 2:
      return Tile<2>(a, lda, b, pairs, c, accumulate);
    case 3:
      return Tile<3>(a, lda, b, pairs, c, accumulate);
    case 4:
      return Tile<4>(a, lda, b, pairs, c, accumulate);
    case 5:
      return Tile<5>(a, lda, b, pairs, c, accumulate);
    default:
      return Tile<6>(a, lda, b, pairs, c, accumulate);
  }
}

}  // namespace nxrt::cpu::quantized

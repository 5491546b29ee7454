// AVX-VNNI micro-kernel of the 8-bit product (int8_gemm_core.h), for CPUs with the VEX-encoded
// vpdpbusd but without AVX-512 (Intel Alder Lake and later client cores, Zen 5 with AVX-512 off)
// or where the session caps the ISA at AVX2: a tile of up to 6 rows x 16 columns in 12 ymm
// int32 accumulators (two per row). Same packed layout as the AVX512-VNNI kernel: per quad of k,
// 16 columns x 4 s8 of B (two ymm loads) and each row's 4 u8 activations broadcast as an int32;
// vpdpbusd adds the four u8 x s8 products into int32 without intermediate saturation (exact).
// Built with -mavxvnni (CMakeLists.txt) and only called when the CPU has it.
#include <immintrin.h>

#include <cstring>

#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::quantized {
namespace {

template <int MR>
void Tile(const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads, int32_t* c,
          bool accumulate) {
  __m256i lo[MR], hi[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    const __m256i* cr = reinterpret_cast<const __m256i*>(c + r * 16);
    lo[r] = accumulate ? _mm256_loadu_si256(cr) : _mm256_setzero_si256();
    hi[r] = accumulate ? _mm256_loadu_si256(cr + 1) : _mm256_setzero_si256();
  }
  for (int64_t g = 0; g < quads; ++g) {
    const __m256i* bg = reinterpret_cast<const __m256i*>(b + g * 64);
    const __m256i b_lo = _mm256_loadu_si256(bg), b_hi = _mm256_loadu_si256(bg + 1);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      int32_t quad;
      std::memcpy(&quad, a + r * lda + 4 * g, sizeof(quad));
      const __m256i av = _mm256_set1_epi32(quad);
      lo[r] = _mm256_dpbusd_avx_epi32(lo[r], av, b_lo);
      hi[r] = _mm256_dpbusd_avx_epi32(hi[r], av, b_hi);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    __m256i* cr = reinterpret_cast<__m256i*>(c + r * 16);
    _mm256_storeu_si256(cr, lo[r]);
    _mm256_storeu_si256(cr + 1, hi[r]);
  }
}

}  // namespace

void Int8TileAvxVnni(int mr, const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads,
                     int32_t* c, bool accumulate) {
  switch (mr) {
    case 1:
      return Tile<1>(a, lda, b, quads, c, accumulate);
    case 2:
      return Tile<2>(a, lda, b, quads, c, accumulate);
    case 3:
      return Tile<3>(a, lda, b, quads, c, accumulate);
    case 4:
      return Tile<4>(a, lda, b, quads, c, accumulate);
    case 5:
      return Tile<5>(a, lda, b, quads, c, accumulate);
    default:
      return Tile<6>(a, lda, b, quads, c, accumulate);
  }
}

}  // namespace nxrt::cpu::quantized

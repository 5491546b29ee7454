// AVX512-VNNI micro-kernel of the 8-bit product (int8_gemm_core.h): a tile of up to 8 rows x 16
// columns in 8 zmm int32 accumulators. Per quad of k: one load of B (16 columns x 4 s8), one
// broadcast of each row's 4 u8 activations as an int32, and one vpdpbusd per row, which adds
// the four u8 x s8 products into int32 without intermediate saturation (exact).
// Built with -mavx512vnni (CMakeLists.txt) and only called when the CPU has it.
#include <immintrin.h>

#include <cstring>

#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::quantized {
namespace {

template <int MR>
void Tile(const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads, int32_t* c,
          bool accumulate) {
  __m512i acc[MR];
  // Unrolled, so the accumulators live in registers.
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    acc[r] = accumulate ? _mm512_loadu_si512(c + r * 16) : _mm512_setzero_si512();
  }
  for (int64_t g = 0; g < quads; ++g) {
    const __m512i bv = _mm512_loadu_si512(b + g * 64);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      int32_t quad;
      std::memcpy(&quad, a + r * lda + 4 * g, sizeof(quad));
      acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_set1_epi32(quad), bv);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_si512(c + r * 16, acc[r]);
}

}  // namespace

void Int8TileAvx512Vnni(int mr, const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads,
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
    case 6:
      return Tile<6>(a, lda, b, quads, c, accumulate);
    case 7:
      return Tile<7>(a, lda, b, quads, c, accumulate);
    default:
      return Tile<8>(a, lda, b, quads, c, accumulate);
  }
}

}  // namespace nxrt::cpu::quantized

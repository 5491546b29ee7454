// The AVX-512 stores of integer_conv_output.h: 16 sums in one register, the product with the
// scale in two registers of 8 doubles, converted back rounding half to even (the default
// rounding mode, as nearbyint), and narrowed to 8 bits with saturation by vpmovsdb / vpmovusdb;
// short runs are masked. The same arithmetic as the AVX2 bodies and RequantizeRunScalar.
// Built with AVX-512 F/BW/DQ/VL (CMakeLists.txt) and only called when the CPU has them.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/linalg/integer_conv_output.h"
#include "kernels/linalg/quantized_common.h"

namespace nxrt::cpu::linalg {
namespace {

// The zero-masked forms with every lane selected throughout: GCC 12 warns that the plain ones
// read an uninitialised source (-Wmaybe-uninitialized) in its own headers.
constexpr __mmask16 kAll = 0xFFFF;
constexpr __mmask8 kAll8 = 0xFF;

__mmask16 FirstLanes(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << count) - 1);
}

// Output channel m's 16 sums `v` (bias not yet added) to element `at` on, the first `count`.
void Store16(const IntegerConvOutput& out, int64_t m, __m512i v, int64_t at, int64_t count) {
  const __mmask16 keep = FirstLanes(count);
  if (out.yf != nullptr) {
    // Separate multiply and add, as the unfused Mul and Add round.
    __m512 f = _mm512_maskz_cvtepi32_ps(kAll, v);
    f = _mm512_maskz_mul_ps(kAll, f, _mm512_set1_ps(out.fscale_of(m)));
    __asm__("" : "+v"(f));  // keeps the compiler from contracting the Mul and Add into an FMA
    f = _mm512_maskz_add_ps(kAll, f, _mm512_set1_ps(out.fbias_of(m)));
    if (out.act_lo > -std::numeric_limits<float>::infinity())
      f = _mm512_maskz_max_ps(kAll, f, _mm512_set1_ps(out.act_lo));
    if (out.act_hi < std::numeric_limits<float>::infinity())
      f = _mm512_maskz_min_ps(kAll, f, _mm512_set1_ps(out.act_hi));
    _mm512_mask_storeu_ps(out.yf + at, keep, f);
    return;
  }
  v = _mm512_maskz_add_epi32(kAll, v, _mm512_set1_epi32(out.bias_of(m)));
  if (out.y32 != nullptr) {
    _mm512_mask_storeu_epi32(out.y32 + at, keep, v);
    return;
  }
  const double s = out.scale_of(m);
  if (!std::isfinite(s)) {
    int32_t sums[16];
    std::memcpy(sums, &v, sizeof(sums));
    count = count < 16 ? count : 16;
    if (out.y8_signed) {
      RequantizeRunScalar(sums, count, s, out.zero_point, out.floor,
                          static_cast<int8_t*>(out.y8) + at);
    } else {
      RequantizeRunScalar(sums, count, s, out.zero_point, out.floor,
                          static_cast<uint8_t*>(out.y8) + at);
    }
    return;
  }
  // A finite scale keeps the product finite; clamped to +-2^30 (which saturates either way) the
  // conversion stays in range.
  const __m512d scale = _mm512_set1_pd(s), lim = _mm512_set1_pd(1073741824.0);
  const __m512d neg_lim = _mm512_set1_pd(-1073741824.0);
  auto product = [&](__m256i sums8) {
    const __m512d d = _mm512_maskz_mul_pd(kAll8, _mm512_maskz_cvtepi32_pd(kAll8, sums8), scale);
    return _mm512_maskz_cvtpd_epi32(
        kAll8, _mm512_maskz_min_pd(kAll8, _mm512_maskz_max_pd(kAll8, d, neg_lim), lim));
  };
  const __m512i lo = _mm512_maskz_inserti64x4(
      kAll8, _mm512_setzero_si512(), product(_mm512_maskz_extracti64x4_epi64(kAll8, v, 0)), 0);
  __m512i q =
      _mm512_maskz_inserti64x4(kAll8, lo, product(_mm512_maskz_extracti64x4_epi64(kAll8, v, 1)), 1);
  q = _mm512_maskz_max_epi32(kAll,
                             _mm512_maskz_add_epi32(kAll, q, _mm512_set1_epi32(out.zero_point)),
                             _mm512_set1_epi32(out.floor));
  const __m128i bytes = out.y8_signed
                            ? _mm512_maskz_cvtsepi32_epi8(kAll, q)
                            : _mm512_maskz_cvtusepi32_epi8(
                                  kAll, _mm512_maskz_max_epi32(kAll, q, _mm512_setzero_si512()));
  _mm_mask_storeu_epi8(static_cast<uint8_t*>(out.y8) + at, keep, bytes);
}

}  // namespace

void StoreTileAvx512(const IntegerConvOutput& out, const SumTile& t) {
  const __m512i col_sum =
      t.row_za != nullptr ? _mm512_loadu_si512(t.col_sum) : _mm512_setzero_si512();
  for (int r = 0; r < t.rows; ++r) {
    __m512i v = _mm512_maskz_add_epi32(kAll, _mm512_loadu_si512(t.tile + r * 16),
                                       _mm512_set1_epi32(t.row_add[r]));
    if (t.row_za != nullptr) {
      v = _mm512_maskz_sub_epi32(
          kAll, v, _mm512_maskz_mullo_epi32(kAll, _mm512_set1_epi32(t.row_za[r]), col_sum));
    }
    Store16(out, t.m0 + r, v, t.at + r * t.row_stride, t.cols);
  }
}

void StoreRunAvx512(const IntegerConvOutput& out, int64_t m, const float* sums, int64_t at,
                    int64_t count) {
  for (int64_t i = 0; i < count; i += 16) {
    const __mmask16 keep = FirstLanes(count - i);
    Store16(out, m, _mm512_maskz_cvtps_epi32(kAll, _mm512_maskz_loadu_ps(keep, sums + i)), at + i,
            count - i < 16 ? count - i : 16);
  }
}

}  // namespace nxrt::cpu::linalg

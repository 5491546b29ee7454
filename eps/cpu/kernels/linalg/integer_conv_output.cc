// The AVX2 stores of integer_conv_output.h: 16 sums as two registers of 8, requantized by
// Requantize16 (quantized_common.h); short runs and scales that are not finite take
// RequantizeRun's scalar definition.
#include "kernels/linalg/integer_conv_output.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/linalg/quantized_common.h"

namespace nxrt::cpu::linalg {
namespace {

// Output channel m's 16 sums lo, hi (bias not yet added) to element `at` on, `count` <= 16 kept.
void Store16(const IntegerConvOutput& out, int64_t m, __m256i lo, __m256i hi, int64_t at,
             int64_t count) {
  if (out.yf != nullptr) {
    // Separate multiply and add, as the unfused Mul and Add round.
    const __m256 s = _mm256_set1_ps(out.fscale_of(m)), b = _mm256_set1_ps(out.fbias_of(m));
    const __m256 act_lo = _mm256_set1_ps(out.act_lo), act_hi = _mm256_set1_ps(out.act_hi);
    const bool clamp_lo = out.act_lo > -std::numeric_limits<float>::infinity();
    const bool clamp_hi = out.act_hi < std::numeric_limits<float>::infinity();
    auto finish = [&](__m256i v) {
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), s);
      __asm__("" : "+x"(f));  // keeps the compiler from contracting the Mul and Add into an FMA
      f = _mm256_add_ps(f, b);
      if (clamp_lo) f = _mm256_max_ps(f, act_lo);
      if (clamp_hi) f = _mm256_min_ps(f, act_hi);
      return f;
    };
    if (count == 16) {
      _mm256_storeu_ps(out.yf + at, finish(lo));
      _mm256_storeu_ps(out.yf + at + 8, finish(hi));
      return;
    }
    alignas(32) float v[16];
    _mm256_store_ps(v, finish(lo));
    _mm256_store_ps(v + 8, finish(hi));
    std::memcpy(out.yf + at, v, static_cast<size_t>(count) * sizeof(float));
    return;
  }
  const __m256i b = _mm256_set1_epi32(out.bias_of(m));
  lo = _mm256_add_epi32(lo, b);
  hi = _mm256_add_epi32(hi, b);
  if (out.y32 != nullptr) {
    if (count == 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.y32 + at), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.y32 + at + 8), hi);
      return;
    }
    alignas(32) int32_t v[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(v), lo);
    _mm256_store_si256(reinterpret_cast<__m256i*>(v + 8), hi);
    std::memcpy(out.y32 + at, v, static_cast<size_t>(count) * sizeof(int32_t));
    return;
  }
  const double s = out.scale_of(m);
  if (count == 16 && std::isfinite(s)) {
    const __m128i q = out.y8_signed ? Requantize16<int8_t>(lo, hi, s, out.zero_point, out.floor)
                                    : Requantize16<uint8_t>(lo, hi, s, out.zero_point, out.floor);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint8_t*>(out.y8) + at), q);
    return;
  }
  alignas(32) int32_t v[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(v), lo);
  _mm256_store_si256(reinterpret_cast<__m256i*>(v + 8), hi);
  if (out.y8_signed) {
    RequantizeRun(v, count, s, out.zero_point, out.floor, static_cast<int8_t*>(out.y8) + at);
  } else {
    RequantizeRun(v, count, s, out.zero_point, out.floor, static_cast<uint8_t*>(out.y8) + at);
  }
}

template <class Sum>
void Run(const IntegerConvOutput& out, int64_t m, const Sum* sums, int64_t at, int64_t count) {
  for (int64_t i = 0; i < count; i += 16) {
    const int64_t n = count - i < 16 ? count - i : 16;
    __m256i lo, hi;
    if (n == 16) {
      if constexpr (std::is_same_v<Sum, float>) {
        lo = _mm256_cvtps_epi32(_mm256_loadu_ps(sums + i));
        hi = _mm256_cvtps_epi32(_mm256_loadu_ps(sums + i + 8));
      } else {
        lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums + i));
        hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums + i + 8));
      }
    } else {
      alignas(32) int32_t v[16] = {};
      for (int64_t j = 0; j < n; ++j) v[j] = static_cast<int32_t>(sums[i + j]);
      lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(v));
      hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(v + 8));
    }
    Store16(out, m, lo, hi, at + i, n);
  }
}

}  // namespace

void StoreTileAvx2(const IntegerConvOutput& out, const SumTile& t) {
  __m256i sum_lo = _mm256_setzero_si256(), sum_hi = _mm256_setzero_si256();
  if (t.row_za != nullptr) {
    sum_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.col_sum));
    sum_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.col_sum + 8));
  }
  for (int r = 0; r < t.rows; ++r) {
    const auto* row = reinterpret_cast<const __m256i*>(t.tile + r * 16);
    const __m256i add = _mm256_set1_epi32(t.row_add[r]);
    __m256i lo = _mm256_add_epi32(_mm256_loadu_si256(row), add);
    __m256i hi = _mm256_add_epi32(_mm256_loadu_si256(row + 1), add);
    if (t.row_za != nullptr) {
      const __m256i za = _mm256_set1_epi32(t.row_za[r]);
      lo = _mm256_sub_epi32(lo, _mm256_mullo_epi32(za, sum_lo));
      hi = _mm256_sub_epi32(hi, _mm256_mullo_epi32(za, sum_hi));
    }
    Store16(out, t.m0 + r, lo, hi, t.at + r * t.row_stride, t.cols);
  }
}

void StoreRunAvx2(const IntegerConvOutput& out, int64_t m, const float* sums, int64_t at,
                  int64_t count) {
  Run(out, m, sums, at, count);
}

void StoreRunAvx2(const IntegerConvOutput& out, int64_t m, const int32_t* sums, int64_t at,
                  int64_t count) {
  Run(out, m, sums, at, count);
}

}  // namespace nxrt::cpu::linalg

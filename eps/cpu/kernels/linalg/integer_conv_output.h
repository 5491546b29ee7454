// Where the exact int32 sums of an 8-bit convolution go (ConvInteger's int32 planes, or
// QLinearConv's requantized 8-bit planes), and the vector stores that the convolution paths
// (integer_conv_planes.h, depthwise_integer_conv.h) finish with while the sums are still in
// cache: a separate pass over int32 planes cost as much as the convolution on MobileNetV2's
// wide layers, and the requantization itself (in double, for exact rounding) was a quarter of a
// QOperator MobileNetV2 with AVX2 alone, so AVX-512 CPUs take 16-lane bodies
// (integer_conv_output_avx512.cc).
#pragma once

#include <cstdint>
#include <limits>

#include "common/cpu_features.h"

namespace nxrt::cpu::linalg {

// NCHW planes: int32 (y32), 8-bit (y8) or float (yf):
// y8 = saturate(max(round-half-even(sum * scale[m]) + zero_point, floor)), 0 where the product is
// NaN (RequantizeRunScalar's arithmetic, quantized_common.h). `bias` (null or one per output
// channel) is added to every sum first.
// yf = min(max(float(sum) * fscale[m] + fbias[m], act_lo), act_hi), each step rounded as
// quantize_dynamic's unfused Cast, Mul and Add are (no fused multiply-add): ConvInteger's
// float-scaled output (com.nxrt ConvIntegerToFloat) with its Relu or Clip.
struct IntegerConvOutput {
  int32_t* y32 = nullptr;
  float* yf = nullptr;
  const float* fscale = nullptr;  // yf: one per output channel, or one when per_tensor_fscale
  bool per_tensor_fscale = false;
  const float* fbias = nullptr;  // yf: null or one per output channel
  float act_lo = -std::numeric_limits<float>::infinity();
  float act_hi = std::numeric_limits<float>::infinity();
  void* y8 = nullptr;
  bool y8_signed = false;
  const double* scale = nullptr;  // y8: one per output channel, or one when per_tensor_scale
  bool per_tensor_scale = false;
  int32_t zero_point = 0;
  int32_t floor = std::numeric_limits<int32_t>::min();  // a fused Relu: the zero point
  const int32_t* bias = nullptr;
  Isa isa = Isa::kAvx2;  // of the stores

  int32_t bias_of(int64_t m) const { return bias != nullptr ? bias[m] : 0; }
  double scale_of(int64_t m) const { return scale[per_tensor_scale ? 0 : m]; }
  float fscale_of(int64_t m) const { return fscale[per_tensor_fscale ? 0 : m]; }
  float fbias_of(int64_t m) const { return fbias != nullptr ? fbias[m] : 0.0f; }
};

// A tile of `rows` output channels (m0 on) x 16 positions: row r's sums are
// tile[r * 16 + c] + row_add[r] - row_za[r] * col_sum[c] (the last term only when row_za is
// set), for c < cols, to elements at + r * row_stride + c of the output.
struct SumTile {
  const int32_t* tile = nullptr;
  int rows = 0;
  int64_t m0 = 0;
  const int32_t* row_add = nullptr;
  const int32_t* row_za = nullptr;
  const int32_t* col_sum = nullptr;
  int64_t at = 0, row_stride = 0, cols = 0;
};

void StoreTileAvx2(const IntegerConvOutput& out, const SumTile& t);
void StoreTileAvx512(const IntegerConvOutput& out, const SumTile& t);
// Output channel m's `count` sums (int32, or floats holding integers below 2^24) to elements
// [at, at + count).
void StoreRunAvx2(const IntegerConvOutput& out, int64_t m, const float* sums, int64_t at,
                  int64_t count);
void StoreRunAvx2(const IntegerConvOutput& out, int64_t m, const int32_t* sums, int64_t at,
                  int64_t count);
void StoreRunAvx512(const IntegerConvOutput& out, int64_t m, const float* sums, int64_t at,
                    int64_t count);

inline void StoreTile(const IntegerConvOutput& out, const SumTile& t) {
  out.isa == Isa::kAvx512 ? StoreTileAvx512(out, t) : StoreTileAvx2(out, t);
}
inline void StoreRun(const IntegerConvOutput& out, int64_t m, const float* sums, int64_t at,
                     int64_t count) {
  out.isa == Isa::kAvx512 ? StoreRunAvx512(out, m, sums, at, count)
                          : StoreRunAvx2(out, m, sums, at, count);
}
inline void StoreRun(const IntegerConvOutput& out, int64_t m, const int32_t* sums, int64_t at,
                     int64_t count) {
  StoreRunAvx2(out, m, sums, at, count);
}

}  // namespace nxrt::cpu::linalg

// Depthwise convolutions of 8-bit data summed exactly in int32 (ConvInteger, and QLinearConv
// where oneDNN's int8 primitive does not take it): each output channel reads one input channel,
// so rows of taps times a one-column GEMM per group (quantized_conv.cc's general path) did a
// GEMM setup per channel; quantize_dynamic's MobileNetV2 ran 6.3x slower than onnxruntime.
//
// The sums are computed in float on the float depthwise kernels (conv_depthwise.h), which is
// exact: the centred operands are integers of at most 255 in magnitude, so a product is at most
// 65025 and a sum over at most 258 taps stays below 2^24, where every integer is a float and
// every partial sum is exact, in any order. Larger kernels take a direct int32 loop.
#pragma once

#include <cstdint>
#include <vector>

#include "common/cpu_features.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/integer_conv_output.h"

namespace nxrt::cpu::linalg {

// Whether the direct path takes `g`: groups equal to the input channels (any channel
// multiplier), at most two spatial dimensions.
bool SuitsDepthwiseIntegerConv(const ConvGeometry& g);

// The sums bias[m] + sum over taps inside the input of (x - x_zp) * (w - w_zp[m]) into `out`
// (int32 or requantized planes, integer_conv_output.h), for an NCHW `x` of int8 (`x_signed`) or
// uint8 and weights [M, 1, kh, kw] of int8 (`w_signed`) or uint8; `w_zp` holds one zero point or
// one per output channel. Positions outside the input count as x_zp (ConvInteger's padding),
// i.e. add nothing. Output planes run in parallel on up to `threads` threads, on the float
// kernels of `isa`, each plane stored as soon as it is summed.
void DepthwiseIntegerConv(const ConvGeometry& g, const void* x, bool x_signed, const void* w,
                          bool w_signed, int32_t x_zp, const std::vector<int32_t>& w_zp,
                          const IntegerConvOutput& out, int threads, Isa isa);

}  // namespace nxrt::cpu::linalg

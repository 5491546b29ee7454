// 8-bit convolutions summed exactly in int32, computed straight into the output's channel planes
// (ConvInteger, and QLinearConv where oneDNN's int8 primitive does not take it: uint8 weights,
// weight zero points, 1-D and 3-D convolutions, weights given at run time).
//
// Per image and group, the output planes are W [ocg, kdim] times the input's columns of taps
// [kdim, positions]: the weights are the micro-kernel's broadcast operand (packed once), and the
// columns of 16 output positions are made (im2col) and packed per run, one panel at a time, for
// the micro-kernels of the blocked 8-bit GEMM (int8_gemm_core.h: AVX2 int16 pairs, AVX-512 or
// AVX VNNI quads). A tile of output channels x 16 positions is finished in registers' reach: zero
// points and bias added, then stored as int32 or requantized to 8 bits into the planes.
//
// The former route (one row of taps per output position times the weights as the packed operand)
// wrote positions x channels int32 and transposed them into planes; with a MobileNetV2's narrow
// 1 x 1 convolutions (16 input channels over 112 x 112) it ran 5x slower than onnxruntime.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <vector>

#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/integer_conv_output.h"
#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::linalg {

// The weights [M, C / group, k...] (int8 or uint8) of one node, packed once: row m is output
// channel m's kdim = C / group * kernel_size values. On the pair paths (kAvx2, kPortable) a row
// holds w - zp[m] as int16; on the quad paths it holds w as u8 (int8 shifted by +128), with the
// row's sum and shifted zero point for the exact corrections (int8_gemm_core.cc's identity with
// the operands' roles exchanged). The AMX paths (kAmx, kPortableAmx) pad k to 64 and add 15
// zero rows, so tiles of 16 channels x 64 taps can be loaded whole; they multiply 32 output
// channels at a time.
struct PlaneConvWeights {
  quantized::Int8GemmPath path = quantized::Int8GemmPath::kAvx2;
  int64_t group = 0, ocg = 0, kdim = 0;
  int64_t k_padded = 0;          // kdim rounded up to a pair or a quad; the padding is zero
  std::vector<int16_t> a16;      // pair paths: [M][k_padded]
  std::vector<uint8_t> a8;       // quad paths: [M][k_padded]
  std::vector<int32_t> row_sum;  // quad paths: sum over k of a8
  std::vector<int32_t> row_zp;   // quad paths: zp[m] (+128 for int8 weights)
};

// Packs `w` ([m, kdim], int8 when `w_signed`, else uint8) for `group` groups and `gemm_path`
// (the 8-bit GEMM's path for this CPU, int8_gemm_core.h); `zp` has one entry or m.
PlaneConvWeights PackPlaneConvWeights(quantized::Int8GemmPath gemm_path, const void* w,
                                      bool w_signed, int64_t m, int64_t kdim, int64_t group,
                                      const std::vector<int32_t>& zp);

// The convolution of `x` (NCHW, int8 when `x_signed`, else uint8, zero point x_zp; positions
// outside the input count as x_zp) with the packed weights, on up to `threads` threads.
void PlaneIntegerConv(const ConvGeometry& g, const void* x, bool x_signed, int32_t x_zp,
                      const PlaneConvWeights& w, const IntegerConvOutput& out, int threads);

}  // namespace nxrt::cpu::linalg

// 2-D convolutions over few input channels (the first layer of image models: 3 channels, 3x3
// or 7x7, stride 2) computed directly on NCHW with the pointwise convolution's register tiles
// (pointwise_conv.h). Such a layer has too little depth per output for oneDNN's blocked kernels
// to pay for their reorders, and its output (64 x 112 x 112 in ResNet and SqueezeNet) is written
// once here, in the final layout, with bias, summand and activations applied in registers.
//
// The input is first copied into a zero-padded buffer, so every tap of every output pixel reads
// memory without a bounds test; an output row is then a pointwise product over the C x kh x kw
// taps, tap k of pixel p reading the padded buffer at offset[k] + stride * p (stride 1 or 2; 2
// keeps the even lanes of two loads). The ONNX weight [M, C, kh, kw] is already that product's
// [M, K] matrix, packed once like a pointwise weight. Output rows (and, when rows are few,
// blocks of output channels) are split over the session's pool.
#pragma once

#include <cstdint>

#include "common/cpu_features.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/pointwise_conv.h"

namespace nxrt::cpu::linalg {

// Input channels up to which the direct path replaces oneDNN.
constexpr int64_t kSmallDepthMaxChannels = 4;

// Whether `g` takes this path: 2-D, one group, at most kSmallDepthMaxChannels input channels,
// column stride 1 or 2 (any row stride, dilations and padding), not 1x1.
bool UseSmallDepthConv(const ConvGeometry& g);

// Runs `g` for every image. `job` carries the packed weights (K = in_channels x kernel taps),
// bias and activations; its pointers and pixel fields are set here. x [N, C, H, W], z (summand
// or null) and y [N, M, OH, OW].
void RunSmallDepthConv(Isa isa, const ConvGeometry& g, PointwiseJob job, const float* x,
                       const float* z, float* y, int threads);

}  // namespace nxrt::cpu::linalg

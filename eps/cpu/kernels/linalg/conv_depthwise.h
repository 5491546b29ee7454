// Direct depthwise convolution on plain NCHW (NCW, NCDHW) float32 data.
//
// Depthwise convolutions do little arithmetic per byte, so their cost is memory traffic. oneDNN's
// depthwise kernels want a blocked or NHWC layout; reordering the input there and the output
// back costs about twice the convolution itself (measured on MobileNetV2). Working on each
// channel plane in place avoids both reorders.
#pragma once

#include <cstdint>
#include <functional>

#include "common/cpu_features.h"
#include "kernels/linalg/conv_geometry.h"

namespace nxrt::cpu::linalg {

// One input channel per group (group == in_channels); out_channels may be a multiple of it.
bool IsDepthwiseConv(const ConvGeometry& g);

// y = depthwise_conv(x, w) + bias (+ z). w is [M, 1, k...]; bias and z may be nullptr.
// Planes are split across `threads`. `epilogue`, if set, runs on each output plane (pointer,
// element count) right after it is computed, while it is still in cache (fused activations).
// 2-D planes with a width stride of 1 or 2 take the single-pass bodies of `isa`
// (depthwise_2d.h); other geometries a padded-plane or row-by-row loop.
void DepthwiseConvNchw(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                       const float* z, float* y, int threads, Isa isa,
                       const std::function<void(float*, int64_t)>& epilogue = {});

}  // namespace nxrt::cpu::linalg

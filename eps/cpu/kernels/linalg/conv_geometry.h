// Attribute parsing and output-shape arithmetic shared by Conv, ConvTranspose, ConvInteger and
// QLinearConv. Geometry is normalised to three spatial dimensions (leading unit dimensions for
// 1-D and 2-D convolutions) so every loop nest below is written once.
#pragma once

#include <array>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/small_vector.h"

namespace nxrt::cpu::linalg {

// Attributes as written on the node; read once in the kernel constructor.
struct ConvAttributes {
  std::string op;        // for messages: "Conv node 'x'"
  std::string auto_pad;  // NOTSET, SAME_UPPER, SAME_LOWER or VALID
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  std::vector<int64_t> output_padding, output_shape;  // ConvTranspose only
  int64_t group = 1;

  ConvAttributes() = default;  // filled by the caller (compiled groups read copied attributes)
  explicit ConvAttributes(const ep::NodeView& node);
};

constexpr int kMaxSpatial = 3;
using Dims3 = std::array<int64_t, kMaxSpatial>;

struct ConvGeometry {
  int spatial = 0;  // 1, 2 or 3: the real number of spatial dimensions
  int64_t batch = 0;
  int64_t in_channels = 0;   // total input channels
  int64_t out_channels = 0;  // total output channels
  int64_t group = 1;
  // Normalised to 3-D: for spatial < 3 the leading entries are in=out=kernel=stride=dilation=1,
  // pads 0.
  Dims3 in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1};
  Dims3 pad_begin{0, 0, 0}, pad_end{0, 0, 0};

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t in_channels_per_group() const { return in_channels / group; }
  int64_t out_channels_per_group() const { return out_channels / group; }
  // The output dimensions [N, C_out, spatial...] in the real rank.
  Dims output_dims() const;
  // Only the real (not normalised) spatial entries of a Dims3.
  Dims real(const Dims3& d) const;
};

// Conv / ConvInteger / QLinearConv: x is [N, C, spatial...], w is [M, C/group, k...].
ConvGeometry ComputeConvGeometry(const ConvAttributes& attrs, std::span<const int64_t> x_shape,
                                 std::span<const int64_t> w_shape);

// A 2-D convolution over [H, 1] with a [kH, 1] kernel (no padding across the width) reads and
// writes memory exactly as one over [1, H] with a [1, kH] kernel, in NCHW and NHWC alike; the
// second form is what vectorised kernels block over (output width). Returns `g` in that form
// when it applies (Magika's [256, 512, 1] x [512, 256, 5, 1] convolution: oneDNN's direct kernel
// computed one output position per row), else `g` itself.
ConvGeometry AsRowConvolution(const ConvGeometry& g);

// ConvTranspose: x is [N, C, spatial...], w is [C, M/group, k...]. pad_begin/pad_end describe
// where the full "scatter" result is cropped: output index o receives input i through kernel
// tap t when o = i * stride - pad_begin + t * dilation. pad_end can be negative when output_shape
// asks for more than the scatter produces (those positions get bias only).
ConvGeometry ComputeConvTransposeGeometry(const ConvAttributes& attrs,
                                          std::span<const int64_t> x_shape,
                                          std::span<const int64_t> w_shape);

}  // namespace nxrt::cpu::linalg

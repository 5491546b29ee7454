// Dead kernel taps: taps of a convolution that only ever read padding, whatever the output
// position (a 3x3 atrous convolution at rate 24 over a 20x20 map reads the image with its centre
// tap only). Dropping them leaves the same result for less work, and keeps oneDNN's jit kernels,
// which refuse padding of more than a few taps (kernels/linalg/conv_plan.h).
#pragma once

#include <vector>

#include "kernels/linalg/conv_geometry.h"

namespace nxrt::cpu::linalg {

// The kernel taps of each spatial dimension that read the image for at least one output
// position, [first, first + count), and the paddings of the convolution over only those taps
// (same output size, same result: the dropped taps only ever multiplied padding).
struct LiveTaps {
  Dims3 first{0, 0, 0}, count{1, 1, 1};
  Dims3 pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  bool trims = false;  // some tap is dead
};
LiveTaps FindLiveTaps(const ConvGeometry& g);

// `g` over its live taps only.
ConvGeometry TrimmedGeometry(const ConvGeometry& g, const LiveTaps& live);

// Weights [M, C/group, k...] (normalised to 3 spatial dimensions, as in ConvGeometry) over the
// live taps only.
std::vector<float> TrimmedWeights(const ConvGeometry& g, const LiveTaps& live, const float* w);

}  // namespace nxrt::cpu::linalg

// One output plane of a 2-D depthwise convolution, computed in a single pass over the output
// (no padded copy of the input, no intermediate plane): a hand-written body per ISA, chosen at
// run time (common/cpu_features.h).
//
// The output is walked in tiles of up to R rows x one vector of columns (8 floats with AVX2,
// 16 with AVX-512): the R accumulators are independent, which hides the FMA latency on short
// rows (7 to 28 wide in MobileNet-style networks) as well as on long ones, and the rows of a
// tile share input rows in L1. Columns whose windows reach into the padding, and the last
// partial vector of a row, load and store under a lane mask (masked-off lanes read nothing, so
// no border copy is needed); interior tiles use plain loads. Stride 2 along the width loads
// two vectors and keeps the even lanes.
#pragma once

#include <cstdint>

namespace nxrt::cpu::linalg {

struct DepthwisePlane2d {
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1;  // stride_w must be 1 or 2
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};

// True when the single-pass bodies handle the geometry: stride along the width 1 or 2, kernels
// up to 16 wide.
inline bool Depthwise2dSupported(const DepthwisePlane2d& p) {
  return (p.stride_w == 1 || p.stride_w == 2) && p.kernel_h >= 1 && p.kernel_w >= 1 &&
         p.kernel_w <= 16 && p.stride_h >= 1 && p.dilation_h >= 1 && p.dilation_w >= 1;
}

// Rows above and below the plane read a row of zeros instead (no test per load): it must hold
// ZeroRowFloats(p) zeros, of which the first ZeroRowLead(p) stand left of column 0.
inline int64_t ZeroRowLead(const DepthwisePlane2d& p) { return p.pad_left; }
inline int64_t ZeroRowFloats(const DepthwisePlane2d& p) {
  return p.pad_left + p.stride_w * (p.out_w + 16) + (p.kernel_w - 1) * p.dilation_w + 32;
}

// y[oh, ow] = bias + sum_{kh, kw} w[kh, kw] * x[oh * sh - pt + kh * dh, ow * sw - pl + kw * dw]
// (+ z[oh, ow] when z is not null); taps outside the input count as zero. x is in_h x in_w,
// y and z are out_h x out_w, all row-major and contiguous; `zeros` as ZeroRowFloats says.
void Depthwise2dPlaneAvx2(const DepthwisePlane2d& p, const float* x, const float* zeros,
                          const float* w, float bias, const float* z, float* y);
void Depthwise2dPlaneAvx512(const DepthwisePlane2d& p, const float* x, const float* zeros,
                            const float* w, float bias, const float* z, float* y);

}  // namespace nxrt::cpu::linalg

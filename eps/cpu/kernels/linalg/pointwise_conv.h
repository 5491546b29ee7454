// 1x1 convolution (stride 1, no padding, one group) on NCHW data as a register-tiled product
// Y[OC, P] = W[OC, IC] * X[IC, P] per image (P pixels), with the bias, the fused summand and the
// common activations applied to the tile in registers before it is stored: one write of Y, no
// seeding pass before the product and no activation pass after it (what the oneDNN sgemm route
// cost: three passes over outputs of up to 5 MB in MobileNetV2).
//
// Tiles are kRows output channels x three vectors of pixels (8 x 48 with AVX-512, 4 x 24 with
// AVX2), accumulated over all input channels with one broadcast weight per row and one load per
// vector; the last partial vector of a row loads and stores under a mask. Weights are packed
// once per ISA ([OC / kRows blocks][IC][kRows], zero rows past OC) so each k reads one
// contiguous group. Pixels are walked in chunks whose slice of X (IC x chunk) stays in L2 while
// every block of output channels passes over it; chunks and channel blocks are the units split
// over threads.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/cpu_features.h"
#include "kernels/linalg/fused_activation.h"

namespace nxrt::cpu::linalg {

// One image's product and everything the tiles need.
struct PointwiseJob {
  int64_t out_channels = 0, in_channels = 0, pixels = 0;
  const float* x = nullptr;         // [IC, P]
  const float* packed_w = nullptr;  // PackPointwiseWeights layout for the job's ISA
  const float* bias = nullptr;      // [OC] or null
  const float* z = nullptr;         // [OC, P] summand or null
  float* y = nullptr;               // [OC, P]
  const FusedActivation* acts = nullptr;
  int act_count = 0;
  // Activations the epilogue cannot do in registers, applied to each stored row segment while
  // it is in L1 (after `acts`), or empty.
  std::function<void(float* row, int64_t n)> rest;
  // Set for one output row of a direct convolution (small_depth_conv.h): input k of pixel p is
  // x[x_offsets[k] + x_step * p] (x_step 1 or 2, every read inside the caller's buffer, so no
  // load is masked) instead of x[k * pixels + p], and rows of y and z are y_stride apart.
  const int64_t* x_offsets = nullptr;
  int x_step = 1;
  int64_t y_stride = 0;  // 0: pixels
};

// Images of at most this many pixels run with output channels in the vector lanes instead of
// pixels (a matrix-vector product per pixel; squeeze-and-excitation blocks have one pixel).
constexpr int64_t kFewPixels = 4;

// Output channels per tile for `isa`.
int PointwiseRows(Isa isa);

// Pixels per full tile for `isa`.
int64_t PointwiseTileColumns(Isa isa);

// Floats of the packed weights for `isa`.
int64_t PointwisePackedSize(Isa isa, int64_t out_channels, int64_t in_channels);

// w [OC, IC] row-major -> packed (PointwisePackedSize floats).
void PackPointwiseWeights(Isa isa, const float* w, int64_t out_channels, int64_t in_channels,
                          float* packed);

// Runs the tiles of output-channel blocks [block_begin, block_end) x pixels [p_begin, p_end).
void PointwiseTilesAvx2(const PointwiseJob& job, int64_t block_begin, int64_t block_end,
                        int64_t p_begin, int64_t p_end);
void PointwiseTilesAvx512(const PointwiseJob& job, int64_t block_begin, int64_t block_end,
                          int64_t p_begin, int64_t p_end);

// All pixels of a job with x_offsets set (one output row), channel blocks [block_begin,
// block_end).
void GatheredRowTilesAvx2(const PointwiseJob& job, int64_t block_begin, int64_t block_end);
void GatheredRowTilesAvx512(const PointwiseJob& job, int64_t block_begin, int64_t block_end);

// The whole image on up to `threads` threads of the session's pool.
void RunPointwise(Isa isa, const PointwiseJob& job, int threads);

}  // namespace nxrt::cpu::linalg

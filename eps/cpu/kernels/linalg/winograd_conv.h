// 3x3 stride-1 convolutions by Winograd's F(4x4, 3x3) on the nChw8c or nChw16c layout of blocked
// groups (eps/cpu/blocked/): each 6x6 input tile is transformed (B^T d B), the 36 transformed
// planes are multiplied by the transformed weights (G g G^T, packed once) as 36 GEMMs over the
// channels, and each 6x6 result becomes a 4x4 output tile (A^T m A). That is 36 multiply-adds per
// input channel for 16 outputs where the direct convolution needs 144.
//
// Measured on the Zen 1 VM, one thread, against oneDNN's direct AVX2 kernel (oneDNN has no
// Winograd below AVX-512), ResNet-50's 3x3 layers: 64 ch at 56x56 2.2 against 5.9 ms, 128 at
// 28x28 2.1 / 6.0, 256 at 14x14 2.7 / 6.0, 512 at 7x7 3.7 / 6.5. Largest error against a
// double-precision reference 1e-5 of the outputs' magnitude (direct: 2e-6).
//
// Eight channels (a block of nChw8c, half a block of nChw16c) are the eight lanes of an AVX2
// vector, so the transforms run on whole blocks with no reordering. Bias, activations and a
// residual sum are applied to each output tile as it is written.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/linalg/dnnl_eltwise.h"

namespace nxrt::cpu::linalg {

class WinogradConv3x3 {
 public:
  // What follows the convolution, in order: an activation, or the sum with an addend.
  struct Step {
    bool sum = false;
    DnnlEltwise eltwise{};
  };
  struct Shape {
    int64_t in_channels = 0, out_channels = 0;
    int64_t height = 0, width = 0;          // input
    int64_t out_height = 0, out_width = 0;  // output
    int64_t pad_top = 0, pad_left = 0;
    int64_t block = 8;  // channels per block of the input and output layout: 8 or 16
  };

  // `weights` [out_channels][in_channels][3][3], `bias` out_channels floats or null.
  WinogradConv3x3(const Shape& shape, const float* weights, const float* bias,
                  std::vector<Step> chain);

  // The same kernel, shared with every other caller of the process that asks for it with equal
  // weights, shape and chain (and no bias): the transformed weights take 4x the direct ones,
  // and a model that repeats a layer (RAFT unrolls its recurrent block 12 times, each node
  // reading the same initializers) would hold them once per node.
  static std::shared_ptr<const WinogradConv3x3> Shared(const Shape& shape, const float* weights,
                                                       const std::vector<Step>& chain);

  // Whether the kernel serves a convolution: 3x3, stride 1, no dilation, one group, enough
  // channels for the GEMMs to pay (decided by measurement, see the .cc), and transformed weights
  // of at most 40 MiB.
  static bool Suits(int64_t in_channels, int64_t out_channels, int64_t kernel_h, int64_t kernel_w,
                    int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
                    int64_t groups);

  // Whether a 2-D convolution takes this kernel (Suits, and from 16 output tiles on: below that
  // the transformed weights, 4x the direct ones, are streamed for few tiles; ResNet-50's 7x7 x
  // 512 layers gained 1.7x for 75 MB more). Both convolution paths ask this (conv_plan.h).
  static bool Serves(int64_t in_channels, int64_t out_channels, int64_t kernel_h, int64_t kernel_w,
                     int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
                     int64_t groups, int64_t out_h, int64_t out_w);

  int64_t tiles() const { return tiles_h_ * tiles_w_; }
  int64_t panels() const { return out_panels_; }  // output channels in runs of 16

  // One image's work cut for `threads` threads: runs of output tiles while each has a few
  // passes of them, otherwise (small images, many channels: ResNet-50's 7x7 x 512) runs of
  // output panels, each thread streaming only its part of the transformed weights.
  struct Part {
    int64_t tile_begin, tile_end, panel_begin, panel_end;
  };
  std::vector<Part> Parts(int threads) const;

  // Output tiles [t0, t1) (row-major over the tile grid) and output channels of panels [p0, p1)
  // of one image. `x`: the input in nChw<block>c (channel blocks height * width * block floats
  // apart, padding lanes zero); `y`: the output, likewise (its padding lanes are written zero);
  // `sum`: the addend of a sum step, shaped like y (may be y itself), else null. Uses this
  // thread's scratch buffers.
  // `bias`, when not null, replaces the bias given at construction: out_channels rounded up to
  // the block (the padding zero).
  void Run(const float* x, float* y, const float* sum, int64_t t0, int64_t t1, int64_t p0,
           int64_t p1, const float* bias = nullptr) const;

 private:
  void TransformInput(const float* x, int64_t t0, int64_t count, float* v) const;
  void TransformOutput(const float* m, int64_t t0, int64_t count, int64_t p0, int64_t p1, float* y,
                       const float* sum, const float* bias) const;

  Shape s_;
  int64_t in_padded_ = 0;   // input channels rounded up to the block (the GEMMs' depth)
  int64_t out_panels_ = 0;  // output channels in panels of 16 (the GEMMs' columns)
  int64_t tiles_h_ = 0, tiles_w_ = 0;
  int64_t tile_block_ = 0;   // tiles per pass (their transformed data stays in cache)
  std::vector<float> u_;     // [36][out_panels][in_padded][16]
  std::vector<float> bias_;  // out_channels rounded up to the block, zero-padded
  struct Segment {
    bool sum = false;
    std::vector<DnnlEltwise> activations;  // when not the sum
  };
  std::vector<Segment> segments_;  // the chain, consecutive activations together
};

}  // namespace nxrt::cpu::linalg

// Decisions about a float convolution that the per-node Conv kernel (conv_dnnl.h, plain NCHW) and
// the blocked groups (blocked/blocked_program.cc, nChw8c / nChw16c) share, so each has one home:
//  - dead kernel taps: taps that only ever read padding are dropped before anything else
//    (DeepLabV3's 3x3 atrous convolutions at rates 24 and 36 over a 20x20 map are 1x1
//    convolutions in disguise);
//  - the fused chain (activations and a residual sum) split between oneDNN's post-ops and nxrt's
//    own loops after the primitive, so that oneDNN never falls back to its reference
//    convolution for a post-op order its jit kernels do not take;
//  - the oneDNN primitive descriptor itself, checked: a reference implementation is never kept
//    where another formulation exists (primitive_audit.h), and padding its jit kernels refuse
//    (large dilations with "same" padding) is made explicit instead;
//  - the threading: slices of output channels on the session's pool, slices of output rows, or
//    one primitive on oneDNN's own OpenMP team.
#pragma once

#include <cstdint>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/conv_taps.h"
#include "kernels/linalg/dnnl_eltwise.h"

namespace nxrt::cpu::linalg {

// ---- the fused chain ------------------------------------------------------------------------

// One step after the convolution and its bias: an activation, or the residual sum (the addend,
// a tensor of the output's shape, added element by element).
struct ChainStep {
  bool sum = false;
  DnnlEltwise eltwise;  // when !sum
};

// oneDNN post-ops for the chain's first `count` steps on a destination described by `dst`. A sum
// first is oneDNN's sum (the destination is prefilled with the addend, or written over it in
// place); a sum after an activation is a binary add of the addend read where it lives (argument
// DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1): oneDNN's jit convolutions take a sum only
// before activations and otherwise fall back to the reference one (YOLO's Conv + SiLU +
// residual Add ran 140x slower than onnxruntime).
dnnl::post_ops ChainPostOps(const std::vector<ChainStep>& chain, size_t count,
                            const dnnl::memory::desc& dst);

// The position of the sum in the chain, or -1.
int SumStep(const std::vector<ChainStep>& chain);

// The first Clip: oneDNN's clip turns NaN into a bound where ONNX's keeps it, so it and
// everything after it always run in nxrt.
size_t FirstClip(const std::vector<ChainStep>& chain);

// The first Swish, Sigmoid or erf Gelu (dnnl_eltwise.h FasterAfterThePrimitive): it and
// everything after it run in nxrt's loops after the primitive, on the slice just written. Measured
// on Zen 4 at one thread: a 32-channel 3x3 depthwise convolution over 112 x 112 with Swish 319 ->
// ~235 us, the model around it 0.88 -> 0.79 ms (0.53 -> 0.45 at two threads), with Gelu 0.91 ->
// 0.84 ms; EfficientNet-B0 12.75 -> 11.9 ms (7.0 -> 6.3 at two threads). Tanh gained nothing and
// stays.
size_t FirstSlowPostOp(const std::vector<ChainStep>& chain);

// The first activation that makes zero nonzero (Sigmoid, HardSigmoid, a shift); a sum keeps
// zero (the addend's padding lanes are zero). A convolution that writes a block's padding lanes
// itself (narrow groups over channels that do not fill whole blocks) runs that step and those
// after it on the real lanes only, after the primitive: padding lanes stay zero.
size_t FirstNonZeroStep(const std::vector<ChainStep>& chain);

// How many of the chain's first steps (at most `limit`) run as post-ops: the most for which
// `is_reference(count)` says oneDNN would not fall back to its reference convolution (0 when
// even the bare convolution would: the caller then tries another formulation).
size_t PrimitiveChainLength(size_t limit, const std::function<bool(size_t count)>& is_reference);

// ---- threading ------------------------------------------------------------------------------

// Multiply-adds (per image) below which a convolution runs as one slice: about 20 us.
constexpr int64_t kMinConvSliceMacs = int64_t{1} << 17;
// Weight bytes from which a convolution is sliced whatever its multiply-adds: over a 1x1 image
// (squeeze-and-excitation) it only streams its weight, one slice per thread halves that
// (MobileNetV3-small's 576 -> 144 -> 576: 37 us each at one thread).
constexpr int64_t kMinConvSliceWeightBytes = int64_t{1} << 16;

// Whether a convolution of this much work per image and this much weight is worth cutting into
// slices for the session's threads (otherwise one slice, on one thread).
inline bool WorthSlicing(double macs_per_image, int64_t weight_bytes) {
  return macs_per_image >= static_cast<double>(kMinConvSliceMacs) ||
         weight_bytes >= kMinConvSliceWeightBytes;
}

// How a convolution's work is split over the session's threads.
struct ConvThreads {
  enum Kind {
    kOne,       // one slice on the calling thread
    kChannels,  // `slices` slices of whole output-channel blocks (or groups), one per thread
    kRows,      // `slices` runs of output rows (one block of output channels: nothing to share)
    kOmpTeam,   // one oneDNN primitive on its own OpenMP team of the session's threads
  } kind = kOne;
  int slices = 1;
};

// The convolution as the threading decision sees it.
struct ConvWork {
  double macs_per_image = 0;
  int64_t weight_bytes = 0;
  int64_t out_channel_blocks = 1;  // blocks (or groups) of output channels a slice can take
  int64_t kernel_size = 1;         // kernel taps
  int64_t out_rows = 1;            // output rows, for row slices
  bool depthwise = false;
  bool channel_slices = true;  // the caller can cut output channels (the per-node path: group 1)
  bool row_slices = false;     // the caller can cut output rows (blocked groups, one block out)
  int threads = 1;
};

// The one threading rule of both convolution paths: nothing below WorthSlicing; a large
// convolution whose channel slices would be poor on oneDNN's OpenMP team (PreferOmpTeam); a
// single block of output channels in runs of rows where the caller can; else slices of output
// channels, one per thread (as many as there are blocks).
ConvThreads PlanConvThreads(const ConvWork& work);

// Channel ranges [begin, end) of whole blocks of `block` channels, `count` of them as even as
// blocks allow (fewer when there are fewer blocks).
std::vector<std::pair<int64_t, int64_t>> ChannelBlockSlices(int64_t channels, int64_t block,
                                                            int count);

// ---- the oneDNN primitive -------------------------------------------------------------------

// What a direct convolution primitive is made of (2-D or 3-D, plain or blocked activations).
struct ConvPrimitiveShape {
  dnnl::memory::desc src, weights, bias, dst;         // weights usually format "any"
  dnnl::memory::dims strides, dilates, pad_l, pad_r;  // dilates as oneDNN counts them (d - 1)
};
dnnl::convolution_forward::primitive_desc MakeConvPrimitive(const ConvPrimitiveShape& shape,
                                                            const dnnl::post_ops& ops);

}  // namespace nxrt::cpu::linalg

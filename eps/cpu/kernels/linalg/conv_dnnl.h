// Float32 convolution with everything that depends only on the weights done once.
//
// Activations arrive and leave in plain NCHW (NCW, NCDHW). Per input geometry one of four
// strategies runs:
//  - kGemm (pointwise convolutions: 1x1 kernel, no padding): the convolution *is* a GEMM on the
//    plain layout, Y[M, HW] = W[M, C] * X[C, HW] (strided inputs are subsampled first), so it
//    runs through sgemm with no layout change at all.
//  - kBlocked: a oneDNN primitive in its preferred activation layout (format "any": nChw8c on
//    AVX2, NHWC for the AVX-512 brgemm kernels); the input is reordered into it and the output
//    back. The direct jit kernels this selects run far faster than oneDNN on plain NCHW (a
//    GEMM-based fallback), which pays for the two reorders.
//  - kDirect (depthwise convolutions): our own per-plane loop on NCHW (conv_depthwise.h); these
//    are memory-bound, and the reorders would cost twice the convolution.
//  - kPlain: the oneDNN primitive on plain NCHW (for measurement).
// kAuto picks kGemm or kDirect where they apply, the direct path for 2-D convolutions over at
// most 4 input channels (small_depth_conv.h: the first layer of image models, where the
// blocked primitive spent as long on reorders and a serial second thread as on arithmetic), and
// kBlocked elsewhere. On ResNet-50's 53 convs
// (one Xeon core, AVX-512, sums of per-layer minima) kAuto took 65-67 ms, kBlocked everywhere
// 71-74, kPlain everywhere 77-79; on MobileNetV2's depthwise layers kDirect 3.4-4.1 ms against
// 4.2-5.8 for kBlocked. With channels_last (below) the same ResNet convs take 57 ms: the reorders
// are the remaining cost, which only a graph kept in NHWC avoids.
// Weights are reordered to the primitive's preferred layout once per distinct layout when they
// are constant (borrowed from the kernel's pre-packed float32 copy, which the plain-layout paths
// read directly), on every run otherwise.
//
// With more than one thread, a oneDNN primitive is split into output-channel slices (whole
// 16-channel blocks), one single-threaded primitive each, run in parallel on the session's pool
// after one shared input reorder; only convolutions that cannot be sliced (grouped, or a single
// block of output channels) use oneDNN's OpenMP threads (docs/threading.md).
//
// Plans (primitive descriptor + primitives + packed weights) are cached per input geometry and
// thread count; Run may be called from several threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "common/cpu_features.h"
#include "common/plan_cache.h"
#include "common/small_vector.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/dnnl_eltwise.h"
#include "kernels/linalg/pointwise_conv.h"
#include "kernels/linalg/primitive_audit.h"

namespace nxrt::cpu::linalg {

// Operations fused after the convolution (and its bias), in this order:
//   y = eltwise_n(... eltwise_1(conv(x) + bias + (sum ? z : 0)))
// Nothing in the plain ONNX Conv uses this; it is here so a graph optimiser can fuse a following
// Relu/Clip/LeakyRelu/Sigmoid/HardSwish/SiLU or a residual Add into the convolution (com.microsoft
// FusedConv).
struct ConvFusion {
  using Eltwise = DnnlEltwise;
  bool sum = false;
  std::vector<Eltwise> eltwise;
};

enum class ConvStrategy { kAuto, kGemm, kDirect, kBlocked, kPlain };

class DnnlConv {
 public:
  // With `channels_last`, activations are NHWC (NWC, NDHWC) instead: every geometry runs as a
  // oneDNN primitive on that layout directly (the AVX-512 brgemm kernels' native one), so a
  // graph kept in NHWC pays no reorders at all.
  DnnlConv(ConvFusion fusion, ConvStrategy strategy, bool channels_last = false);

  // Uses constant weights [M, C/group, k...] (`num_weights` floats, borrowed: they must outlive
  // this object); later Run calls pass nullptr for w. Call before the first Prepare or Run.
  void SetConstantWeights(const float* w, size_t num_weights);
  // The ISA of the hand-written paths (depthwise, pointwise); default: the CPU's best.
  void SetIsa(Isa isa) { isa_ = isa; }
  // Where the oneDNN primitives of the plans are recorded (the session's audit).
  void SetAudit(AuditTarget audit) { audit_ = std::move(audit); }
  // Whether 3x3 stride-1 convolutions may run nxrt's Winograd kernel (ep.cpu.winograd).
  void SetWinograd(bool on) { winograd_ = on; }
  bool has_constant_weights() const { return const_w_ != nullptr; }

  // Builds and caches the plan for this geometry ahead of the first run (optional); `has_bias`
  // says whether Run will receive a bias.
  void Prepare(const ConvGeometry& g, int threads, bool has_bias);

  // y = conv(x, w) + bias (+ z when fusion.sum), then the fused activations; plain layouts.
  // w is ignored when constant weights were set; bias may be nullptr. `threads` is the
  // kernel's thread count: the pool-based paths use all of them, oneDNN primitives (OpenMP)
  // only from kMinOmpParallelMacs on; Run sets OpenMP's count itself.
  void Run(const ConvGeometry& g, const float* x, const float* w, const float* bias, const float* z,
           float* y, int threads);

 private:
  struct Plan;
  struct PlanPart;
  static int PrimitiveThreads(const ConvGeometry& g, int threads);
  // How many output-channel slices a oneDNN primitive is split into on the pool (1: none).
  int PrimitiveParts(const ConvGeometry& g, int threads) const;
  std::shared_ptr<Plan> GetPlan(const ConvGeometry& g, int omp_threads, int parts, bool has_bias);
  // Under mu_; `plain`: oneDNN's primitive on plain NCHW (its GEMM-based convolution) instead of
  // its blocked layout, where that one would be a reference implementation.
  std::shared_ptr<Plan> BuildPlan(const ConvGeometry& g, bool has_bias, int parts, bool plain);
  std::shared_ptr<Plan> BuildDnnlPlan(std::shared_ptr<Plan> plan, const ConvGeometry& g,
                                      bool has_bias, int parts, bool plain);
  void BuildWinogradPlan(Plan& plan, const ConvGeometry& g);
  void RunWinograd(const Plan& plan, const ConvGeometry& g, const float* x, const float* bias,
                   const float* z, float* y, int threads);
  // Constant weights of a slice in its primitive's layout, packed once (under mu_).
  // `share`: reuse (and offer) the packing for other plans with the same layout and channels.
  std::shared_ptr<dnnl::memory> PackedWeights(const PlanPart& part, const float* w, bool share);
  // 1x1 convolutions the register tiles of pointwise_conv.h take (else RunGemm).
  bool UsePointwiseTiles(const ConvGeometry& g) const;
  // The tiles' job for `out_channels` x `depth` weights (packed into this thread's scratch when
  // they are not constant), with the fused bias and activations; pixels, strides and pointers
  // are the caller's.
  PointwiseJob TileJob(const Plan& plan, const float* w, const float* bias, int64_t out_channels,
                       int64_t depth) const;
  void RunPointwiseTiles(const Plan& plan, const ConvGeometry& g, const float* x, const float* w,
                         const float* bias, const float* z, float* y, int threads);
  void RunGemm(const ConvGeometry& g, const float* x, const float* w, const float* bias,
               const float* z, float* y);
  void RunDnnl(const Plan& plan, const ConvGeometry& g, const float* x, const float* w,
               const float* bias, const float* z, float* y, int threads);

  ConvFusion fusion_;
  // fusion_.eltwise split for the tiles (pointwise, small-depth), once: the leading activations
  // they apply in registers, and the rest (from the first they cannot), applied to each stored
  // row.
  static constexpr int kMaxTileActivations = 8;
  FusedActivation tile_acts_[kMaxTileActivations];
  int tile_act_count_ = 0;
  std::vector<ConvFusion::Eltwise> tile_rest_;
  ConvStrategy strategy_;
  bool channels_last_;
  Isa isa_ = DetectedIsa();
  AuditTarget audit_;
  bool winograd_ = true;
  const float* const_w_ = nullptr;  // borrowed constant weights
  size_t const_w_count_ = 0;

  std::mutex mu_;
  // Keyed by geometry, thread count, bias and slices (PlanKey): inline, so a lookup per run
  // allocates nothing. The 64 most recently used are kept (common/plan_cache.h).
  PlanCache<SmallVector<int64_t, 32>, Plan> plans_{64};
  // Constant weights in the layouts the plans want (reordered copies, or the borrowed plain
  // weights wrapped), shared by the plans that want the same layout of the same channels.
  struct PackedWeightsEntry {
    dnnl::memory::desc md;
    int64_t oc_begin = 0;
    std::shared_ptr<dnnl::memory> mem;
  };
  std::vector<PackedWeightsEntry> packed_weights_;
};

// Whether the GEMM strategy applies: a 1x1 kernel with no padding.
bool IsPointwiseConv(const ConvGeometry& g);

// Applies fused activations to m floats in place on this thread.
void ApplyEltwiseRange(const std::vector<ConvFusion::Eltwise>& ops, float* p, int64_t m);
// The same on `rows` rows of `cols` floats, `ld` apart (a GEMM's finished panel): the costly
// activations run over the whole block in one call instead of one call per row.
void ApplyEltwiseRows(const std::vector<ConvFusion::Eltwise>& ops, float* p, int64_t ld,
                      int64_t rows, int64_t cols);

// Applies fused activations to n floats in place (for the paths outside oneDNN primitives).
void ApplyEltwise(const std::vector<ConvFusion::Eltwise>& ops, float* y, int64_t n, int threads);

}  // namespace nxrt::cpu::linalg

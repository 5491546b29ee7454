// 8-bit quantized 2-D convolution (QLinearConv semantics) on oneDNN's int8 primitives, with the
// weights reordered once into the primitive's layout.
//
// y = saturate(round(scale[c] * (conv(x - x_zp, w) + bias[c])) [relu] + y_zp), with
// scale[c] = x_scale * w_scale[c] / y_scale, w int8 with zero point 0 (what quantize_static
// writes: symmetric weights). Activations arrive and leave in NCHW or NHWC (channels_last); the
// primitive runs in its preferred layout (NHWC for the int8 jit kernels), reordered to and from
// it where they differ.
//
// Numerics: on CPUs without VNNI, oneDNN multiplies u8 x s8 pairs with vpmaddubsw, whose int16
// pair sums can saturate (255 * 127 * 2 > 32767), as onnxruntime's MLAS U8S8 kernels do on the
// same CPUs (so nxrt saturates where onnxruntime does, for uint8 activations). For int8
// activations oneDNN shifts the source by +128 first, which puts the raw values mid-range where
// pairs saturate often, while onnxruntime's S8S8 kernels are exact (on small QInt8 convnets
// nxrt was 3-4x farther from the float model). So without VNNI int8 activations take an exact
// path instead: the float convolution (DnnlConv) of the integer values, (x - x_zp) and w as
// floats, whose products and sums are exact below 2^24, then requantized.
// tests/eps/cpu/qdq_check.py compares both against the float model.
//
// Threads: on NHWC activations a convolution of at least kMinParallelMacs is split between the
// session's pool threads, each part a single-threaded primitive: for one image with enough
// output rows, into bands of rows (each reads its rows plus the kernel's halo and writes its rows
// of the output in place; every part has all channels, so narrow products such as MobileNet's
// 16 -> 96 1x1 halve their work, which channel slices did not: half the channels cost 70% of
// the whole there); otherwise into slices of output channels (whole 16-channel blocks), each
// writing its channels densely to scratch and then into the output.
// Otherwise one primitive on oneDNN's OpenMP team (the kernel's thread count, one below
// kMinOmpParallelMacs), set both when it is created (which fixes its team) and when it runs,
// from the kernel's Compute, never inside a pool task.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "kernels/linalg/conv_dnnl.h"
#include "kernels/linalg/conv_geometry.h"

namespace nxrt::cpu::linalg {

struct QConvParams {
  bool x_signed = false;  // x int8 (else uint8)
  bool y_signed = false;  // y int8 (else uint8)
  int32_t x_zero_point = 0;
  int32_t y_zero_point = 0;
  std::vector<float> scale;   // 1 or out_channels values: x_scale * w_scale / y_scale
  std::vector<int32_t> bias;  // empty or out_channels values, in accumulator units
  bool relu = false;
  bool channels_last = false;  // x and y are NHWC (else NCHW)
};

class DnnlQConv {
 public:
  // Copies the int8 weights [M, C/group, kH, kW].
  DnnlQConv(QConvParams params, const int8_t* w, std::vector<int64_t> w_dims);

  const std::vector<int64_t>& weight_dims() const { return w_dims_; }

  // Whether oneDNN has a primitive for this geometry (builds and caches it); false when it
  // declines, and the caller computes the convolution another way.
  bool Supports(const ConvGeometry& g, int threads);

  // Where the primitives are recorded (the session's audit).
  void SetAudit(AuditTarget audit) {
    if (float_conv_) float_conv_->SetAudit(audit);
    audit_ = std::move(audit);
  }

  // x [N, C, H, W] and y [N, M, OH, OW] (NHWC with channels_last); Supports(g) must have said
  // yes.
  void Run(const ConvGeometry& g, const void* x, void* y, int threads);

 private:
  struct Plan;
  static bool HasVnni();
  static int OmpThreads(const ConvGeometry& g, int threads);
  // One primitive for all output channels, or (channels_last, several threads) one
  // single-threaded primitive per slice of output channels, run on the pool.
  struct PlanSet {
    std::vector<std::shared_ptr<Plan>> parts;
    std::vector<int64_t> oc_begin;
    // Row parts (rows true): part p reads input rows from in_row[p] and writes output rows
    // from out_row[p] of a one-image NHWC tensor, all channels.
    bool rows = false;
    std::vector<int64_t> in_row, out_row;
  };
  // The plans for this input shape and thread count (null: oneDNN declined).
  std::shared_ptr<PlanSet> GetPlan(const ConvGeometry& g, int threads);
  // A primitive for output channels [oc_begin, oc_begin + oc_count), under the caller's
  // OpenMP team size.
  std::shared_ptr<Plan> BuildPlan(const ConvGeometry& g, int64_t oc_begin, int64_t oc_count);
  void RunSlices(const PlanSet& set, const ConvGeometry& g, const void* x, void* y, int threads);
  void Execute(const Plan& plan, const dnnl::memory& src, const dnnl::memory& dst,
               dnnl::stream& stream) const;
  // Row parts (PlanSet::rows): one image's output rows split between threads; each part's
  // primitive reads its input rows (with the halo its kernel needs, padding only at the image's
  // own edges) and writes its rows of y in place.
  bool BuildRowParts(PlanSet& set, const ConvGeometry& g, int threads);
  void RunRows(const PlanSet& set, const ConvGeometry& g, const void* x, void* y, int threads);

  // The exact path (see above).
  void RunFloat(const ConvGeometry& g, const void* x, void* y, int threads);

  QConvParams params_;
  std::unique_ptr<DnnlConv> float_conv_;  // set when the exact path runs
  std::vector<float> float_w_, float_bias_;
  std::vector<int8_t> w_;
  std::vector<int64_t> w_dims_;
  AuditTarget audit_;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::shared_ptr<PlanSet>> plans_;  // by input shape, threads
};

}  // namespace nxrt::cpu::linalg

// Float32 convolution through oneDNN, with everything that depends only on the weights done once.
//
// Activations arrive and leave in plain NCHW (NCW, NCDHW). Two execution layouts are available:
//  - kBlocked: the primitive picks its preferred activation layout (nChw8c on AVX2); the input is
//    reordered into it and the output reordered back. The direct jit kernels this selects run
//    about twice as fast as the plain-layout GEMM convolution, which more than pays for the two
//    reorders.
//  - kPlain: the primitive runs on plain NCHW directly (kept for measurement and as a fallback).
// Weights are always reordered to the primitive's preferred layout; for constant weights that
// happens once per distinct weight layout, for weights that are graph inputs on every run.
//
// Plans (primitive descriptor + primitives + reordered weights) are cached per input geometry and
// thread count; Run may be called from several threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/linalg/conv_geometry.h"

namespace nxrt::cpu::linalg {

// Operations fused after the convolution (and its bias), in this order:
//   y = eltwise_n(... eltwise_1(conv(x) + bias + (sum ? z : 0)))
// Nothing in the plain ONNX Conv uses this; it is here so a graph optimiser can fuse a following
// Relu/Clip/LeakyRelu/Sigmoid or a residual Add into the convolution later.
struct ConvFusion {
  struct Eltwise {
    dnnl::algorithm alg;
    float alpha = 0.0f;
    float beta = 0.0f;
  };
  bool sum = false;
  std::vector<Eltwise> eltwise;
};

enum class ConvLayout { kBlocked, kPlain };

class DnnlConv {
 public:
  DnnlConv(ConvFusion fusion, ConvLayout layout) : fusion_(std::move(fusion)), layout_(layout) {}

  // Keeps a copy of constant weights [M, C/group, k...] and optional bias [M]; later Run calls
  // pass nullptr for them. `num_weights` is the element count of w.
  void SetConstantWeights(const float* w, size_t num_weights, const float* bias,
                          int64_t bias_size);
  bool has_constant_weights() const { return !const_w_.empty(); }

  // Builds and caches the plan for this geometry ahead of the first run (optional).
  void Prepare(const ConvGeometry& g, int threads);

  // y = conv(x, w) + bias (+ z when fusion.sum), plain layouts. w and bias are ignored when
  // constant weights were set; bias may be nullptr. `threads` must match the caller's OpenMP
  // setting (see OmpThreadScope).
  void Run(const ConvGeometry& g, const float* x, const float* w, const float* bias,
           const float* z, float* y, int threads);

 private:
  struct Plan;
  std::shared_ptr<Plan> GetPlan(const ConvGeometry& g, int threads, bool has_bias);
  std::shared_ptr<Plan> BuildPlan(const ConvGeometry& g, bool has_bias);  // under mu_

  ConvFusion fusion_;
  ConvLayout layout_;
  std::vector<float> const_w_;
  std::vector<float> const_bias_;
  bool has_const_bias_ = false;

  std::mutex mu_;
  std::map<std::vector<int64_t>, std::shared_ptr<Plan>> plans_;
  // Reordered constant weights, shared by the plans that want the same layout.
  std::vector<std::pair<dnnl::memory::desc, std::shared_ptr<dnnl::memory>>> packed_weights_;
};

}  // namespace nxrt::cpu::linalg

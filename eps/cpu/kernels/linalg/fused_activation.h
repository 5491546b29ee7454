// Activations fused into a convolution and applied by its hand-written bodies.
#pragma once

namespace nxrt::cpu::linalg {

// An activation a convolution body applies in registers before it stores a result, in order
// (the ONNX definitions; NaN passes): pointwise_conv.h, small_depth_conv.h.
struct FusedActivation {
  enum Kind { kRelu, kClip, kHardSwish, kLinear, kSigmoid, kSwish } kind = kRelu;
  // kRelu: negative slope; kClip: [alpha, beta]; kLinear: alpha x + beta; kSwish:
  // x * sigmoid(alpha x)
  float alpha = 0.0f, beta = 0.0f;
};

}  // namespace nxrt::cpu::linalg

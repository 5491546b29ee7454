// Activations fused after a oneDNN primitive (a convolution, a matrix multiply): one oneDNN
// eltwise post-op each, in the order they apply, and how fused nodes name them.
#pragma once

#include <nxrt/nxrt_ep.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "common/cpu_features.h"

namespace nxrt::cpu::linalg {

struct DnnlEltwise {
  dnnl::algorithm alg;  // eltwise_relu (alpha = negative slope), eltwise_clip, eltwise_linear,
                        // eltwise_logistic, eltwise_tanh, eltwise_hardswish, eltwise_swish
                        // (alpha: x * sigmoid(alpha x)), eltwise_gelu_erf
  float alpha = 0.0f;
  float beta = 0.0f;
};

// Swish, Sigmoid and the erf Gelu on AVX-512: oneDNN's jit post-ops divide once per vector for
// these, and nxrt's own loops (a reciprocal estimate and a Newton step, common/logistic_avx512.h)
// over the values just stored are faster, so a fused chain hands oneDNN only what comes before
// the first of them (conv_plan.h FirstSlowPostOp, matmul_dnnl.h; measurements in
// docs/performance.md). nxrt's AVX2 loops divide too, and then the extra pass over the output
// would only cost: AVX2-only machines keep the post-ops.
inline bool FasterAfterThePrimitive(const DnnlEltwise& e) {
  using A = dnnl::algorithm;
  static const bool avx512 = DetectedIsa() == Isa::kAvx512;
  return avx512 && (e.alg == A::eltwise_swish || e.alg == A::eltwise_logistic ||
                    e.alg == A::eltwise_gelu_erf);
}

// Reads the fused activation in the form com.microsoft FusedConv uses: `activation` names the
// op, `activation_params` holds its attributes in order (LeakyRelu alpha; Clip min, max;
// HardSigmoid alpha, beta; none for HardSwish, Swish and Gelu, which only nxrt's own fusion
// produces). Empty for no activation; fails on one it does not know.
inline std::vector<DnnlEltwise> ReadFusedActivation(const ep::KernelInfo& info) {
  std::vector<DnnlEltwise> out;
  const std::string act = info.attr_string("activation", "");
  const std::vector<float> p = info.attr_floats("activation_params");
  auto param = [&](size_t i, float fallback) { return i < p.size() ? p[i] : fallback; };
  using A = dnnl::algorithm;
  if (act.empty() || act == "Identity") return out;
  if (act == "Relu")
    out.push_back({A::eltwise_relu, 0.0f, 0.0f});
  else if (act == "LeakyRelu")
    out.push_back({A::eltwise_relu, param(0, 0.01f), 0.0f});
  else if (act == "Clip")
    out.push_back({A::eltwise_clip, param(0, -3.4028235e38f), param(1, 3.4028235e38f)});
  else if (act == "Sigmoid")
    out.push_back({A::eltwise_logistic, 0.0f, 0.0f});
  else if (act == "Tanh")
    out.push_back({A::eltwise_tanh, 0.0f, 0.0f});
  else if (act == "Swish")  // x * sigmoid(x) (SiLU)
    out.push_back({A::eltwise_swish, 1.0f, 0.0f});
  else if (act == "HardSwish")  // oneDNN 2.x: x * min(max(x / 6 + 0.5, 0), 1)
    out.push_back({A::eltwise_hardswish, 0.0f, 0.0f});
  else if (act == "Gelu")  // 0.5 x (1 + erf(x / sqrt(2)))
    out.push_back({A::eltwise_gelu_erf, 0.0f, 0.0f});
  else if (act == "HardSigmoid") {
    out.push_back({A::eltwise_linear, param(0, 0.2f), param(1, 0.5f)});
    out.push_back({A::eltwise_clip, 0.0f, 1.0f});
  } else {
    ep::Fail(NX_NOT_IMPLEMENTED, info.describe() + ": unsupported fused activation '" + act + "'");
  }
  return out;
}

}  // namespace nxrt::cpu::linalg

// The activations a convolution applies to its results in registers before storing them
// (fused_activation.h), written once over a vector traits class V (common/simd_avx2.h,
// simd_avx512.h) for the tile bodies of each ISA, with a scalar twin for their edges.
#pragma once

#include <cmath>

#include "kernels/linalg/fused_activation.h"

namespace nxrt::cpu::linalg {

// `count` activations of `acts`, in order, on v.
template <class V>
inline typename V::Vec Activate(const FusedActivation* acts, int count, typename V::Vec v) {
  for (int i = 0; i < count; ++i) {
    const FusedActivation& a = acts[i];
    switch (a.kind) {
      case FusedActivation::kRelu: {
        // max(0, v) + alpha * min(0, v); Max/Min return v when it is NaN.
        const typename V::Vec zero = V::Set1(0.0f);
        v = a.alpha == 0.0f ? V::Max(zero, v)
                            : V::Fma(V::Set1(a.alpha), V::Min(zero, v), V::Max(zero, v));
        break;
      }
      case FusedActivation::kClip:
        v = V::Min(V::Set1(a.beta), V::Max(V::Set1(a.alpha), v));
        break;
      case FusedActivation::kHardSwish: {
        const typename V::Vec t = V::Fma(v, V::Set1(1.0f / 6.0f), V::Set1(0.5f));
        v = V::Mul(v, V::Min(V::Set1(1.0f), V::Max(V::Set1(0.0f), t)));
        break;
      }
      case FusedActivation::kLinear:
        v = V::Fma(V::Set1(a.alpha), v, V::Set1(a.beta));
        break;
      case FusedActivation::kSigmoid:
        v = V::Sigmoid(v);
        break;
      case FusedActivation::kSwish:
        v = V::Mul(v, V::Sigmoid(V::Mul(V::Set1(a.alpha), v)));
        break;
    }
  }
  return v;
}

// Scalar twin of Activate (NaN passes as in the vector forms).
inline float ActivateScalar(const FusedActivation* acts, int count, float v) {
  for (int i = 0; i < count; ++i) {
    const FusedActivation& a = acts[i];
    switch (a.kind) {
      case FusedActivation::kRelu:
        if (v < 0.0f) v = a.alpha == 0.0f ? 0.0f : a.alpha * v;
        break;
      case FusedActivation::kClip:
        v = v < a.alpha ? a.alpha : (v > a.beta ? a.beta : v);
        break;
      case FusedActivation::kHardSwish: {
        const float t = std::fma(v, 1.0f / 6.0f, 0.5f);
        v *= t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
        break;
      }
      case FusedActivation::kLinear:
        v = std::fma(a.alpha, v, a.beta);
        break;
      case FusedActivation::kSigmoid:
        v = 1.0f / (1.0f + std::exp(-v));
        break;
      case FusedActivation::kSwish:
        v = v / (1.0f + std::exp(-a.alpha * v));
        break;
    }
  }
  return v;
}

}  // namespace nxrt::cpu::linalg

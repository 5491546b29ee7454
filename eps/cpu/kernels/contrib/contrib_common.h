// Shared pieces of the com.microsoft transformer kernels (kernels/contrib/): one registration
// function per source file, and the input checks they all make.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <string>

#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::contrib {

using nn::DimsToString;

void RegisterGeluVariantKernels(NxKernelRegistry* registry);          // gelu_variants.cc
void RegisterSkipLayerNormKernels(NxKernelRegistry* registry);        // skip_layer_norm.cc
void RegisterSimplifiedLayerNormKernels(NxKernelRegistry* registry);  // simplified_layer_norm.cc
void RegisterEmbedLayerNormKernels(NxKernelRegistry* registry);       // embed_layer_norm.cc
void RegisterAttentionContribKernels(NxKernelRegistry* registry);     // attention_contrib.cc
void RegisterMultiHeadAttentionKernels(NxKernelRegistry* registry);   // multi_head_attention.cc
void RegisterRotaryContribKernels(NxKernelRegistry* registry);        // rotary_embedding_contrib.cc
void RegisterGroupQueryAttentionKernels(NxKernelRegistry* registry);  // group_query_attention.cc

// These kernels compute in float32 only (what onnxruntime's CPU provider offers for them).
inline void RequireFloat(const ep::ConstTensor& t, const char* op, const char* name) {
  NXRT_EP_ENFORCE(
      t.type() == NX_TYPE_FLOAT,
      std::string(op) + ": " + name + " must be float32, got " + ep::ElementTypeName(t.type()));
}

// A per-channel vector (bias, gamma, beta) must be 1-D with `n` elements.
inline const float* ChannelVector(const ep::ConstTensor& t, int64_t n, const char* op,
                                  const char* name) {
  RequireFloat(t, op, name);
  NXRT_EP_ENFORCE(t.rank() == 1 && t.shape()[0] == n, std::string(op) + ": " + name +
                                                          " must have shape [" + std::to_string(n) +
                                                          "], got " + DimsToString(t.shape()));
  return t.data<float>();
}

// Rotary embedding of one head vector: its first 2*half features turned by the angles of one
// position (cosines c, sines s), as pairs (2k, 2k+1) when interleaved, else (k, k + half).
// `in` may be `out`; features past 2*half are the caller's.
inline void RotateHead(const float* in, float* out, const float* c, const float* s, int64_t half,
                       bool interleaved) {
  if (interleaved) {
    for (int64_t k = 0; k < half; ++k) {
      const float a = in[2 * k], b = in[2 * k + 1];
      out[2 * k] = a * c[k] - b * s[k];
      out[2 * k + 1] = a * s[k] + b * c[k];
    }
  } else {
#pragma omp simd
    for (int64_t k = 0; k < half; ++k) {
      const float a = in[k], b = in[k + half];
      out[k] = a * c[k] - b * s[k];
      out[k + half] = a * s[k] + b * c[k];
    }
  }
}

}  // namespace nxrt::cpu::contrib

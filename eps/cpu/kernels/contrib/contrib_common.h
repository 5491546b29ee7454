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

}  // namespace nxrt::cpu::contrib

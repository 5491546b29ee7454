// Shared helpers of the neural-network kernel family: per-file registration entry points,
// accumulation types for 16-bit floats, and readers for small shape-like inputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/dispatch.h"
#include "common/half.h"
#include "common/small_vector.h"

namespace nxrt::cpu::nn {

// One registration function per source file; RegisterNnKernels calls them all.
void RegisterPoolKernels(NxKernelRegistry* registry);
void RegisterMaxPoolNhwcKernels(NxKernelRegistry* registry);
void RegisterGlobalPoolKernels(NxKernelRegistry* registry);
void RegisterMaxUnpoolKernels(NxKernelRegistry* registry);
void RegisterRoiKernels(NxKernelRegistry* registry);
void RegisterNonMaxSuppressionKernels(NxKernelRegistry* registry);
void RegisterOptimizerKernels(NxKernelRegistry* registry);
void RegisterBatchNormKernels(NxKernelRegistry* registry);
void RegisterLayerNormKernels(NxKernelRegistry* registry);
void RegisterGroupNormKernels(NxKernelRegistry* registry);
void RegisterLpNormKernels(NxKernelRegistry* registry);
void RegisterLrnKernels(NxKernelRegistry* registry);
void RegisterResizeKernels(NxKernelRegistry* registry);
void RegisterLstmKernels(NxKernelRegistry* registry);
void RegisterGruKernels(NxKernelRegistry* registry);
void RegisterSimpleRnnKernels(NxKernelRegistry* registry);
void RegisterGridSampleKernels(NxKernelRegistry* registry);
void RegisterAffineGridKernels(NxKernelRegistry* registry);
void RegisterAttentionKernels(NxKernelRegistry* registry);
void RegisterFusedAttentionKernel(NxKernelRegistry* registry);
void RegisterRotaryEmbeddingKernels(NxKernelRegistry* registry);
void RegisterDeformConvKernels(NxKernelRegistry* registry);
void RegisterLinearAttentionKernels(NxKernelRegistry* registry);
void RegisterCausalConvKernels(NxKernelRegistry* registry);

// Arithmetic type for element type T: 16-bit floats compute in float, double stays double.
template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
constexpr bool kIsFloatLike =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Reads an int32/int64 tensor (shape inputs, axes, lengths) into int64 values.
inline std::vector<int64_t> ReadInt64s(const ep::ConstTensor& t, const char* what) {
  size_t n = t.size();
  std::vector<int64_t> out(n);
  if (t.type() == NX_TYPE_INT64) {
    const int64_t* p = t.data<int64_t>();
    for (size_t i = 0; i < n; ++i) out[i] = p[i];
  } else if (t.type() == NX_TYPE_INT32) {
    const int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < n; ++i) out[i] = p[i];
  } else {
    ep::Fail(NX_INVALID_ARGUMENT,
             std::string(what) + " must be int32 or int64, got " + ep::ElementTypeName(t.type()));
  }
  return out;
}

// Reads a float-typed tensor (scales, rois...) of any float element type into doubles.
inline std::vector<double> ReadDoubles(const ep::ConstTensor& t, const char* what) {
  size_t n = t.size();
  std::vector<double> out(n);
  if (t.type() != NX_TYPE_FLOAT && t.type() != NX_TYPE_DOUBLE && t.type() != NX_TYPE_FLOAT16 &&
      t.type() != NX_TYPE_BFLOAT16) {
    ep::Fail(NX_INVALID_ARGUMENT,
             std::string(what) + " must be a float tensor, got " + ep::ElementTypeName(t.type()));
  }
  DispatchFloat(t.type(), [&]<class T>() {
    const T* p = t.data<T>();
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(static_cast<AccOf<T>>(p[i]));
  });
  return out;
}

// Converts a float-like tensor's elements to float (for 16-bit inputs of float kernels).
template <class T>
inline void ToFloatBuffer(const T* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// Normalises a possibly negative axis against `rank`; throws naming the op when out of range.
inline int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* op) {
  if (axis < -rank || axis >= rank) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": axis " + std::to_string(axis) +
                                      " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

inline std::string DimsToString(std::span<const int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(s[i]);
  }
  out += ']';
  return out;
}

}  // namespace nxrt::cpu::nn

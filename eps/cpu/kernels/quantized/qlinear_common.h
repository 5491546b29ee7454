// Helpers of the com.microsoft QLinear* operators (the QOperator format of onnxruntime's
// static quantizer): per-tensor scale / zero point pairs, 8-bit element access and
// requantization of a float value, rounding half to even as onnxruntime's QuantizeLinear.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <string>

#include "kernels/linalg/quantized_common.h"

namespace nxrt::cpu::quantized {

// One per-tensor quantization: real = (q - zero_point) * scale.
struct QParams {
  float scale = 1.f;
  int32_t zero_point = 0;
};

// Reads the scale at `scale_index` and the optional zero point at `zero_index` (absent: 0).
inline QParams ReadQParams(ep::KernelContext& ctx, size_t scale_index, size_t zero_index,
                           NxElementType data_type, const std::string& what) {
  ep::ConstTensor s = ctx.input(scale_index);
  NXRT_EP_ENFORCE(s.type() == NX_TYPE_FLOAT && s.size() == 1,
                  what + ": only per-tensor float scales are supported");
  QParams p;
  p.scale = s.data<float>()[0];
  std::optional<ep::ConstTensor> z;
  if (zero_index < ctx.input_count()) z = ctx.optional_input(zero_index);
  p.zero_point = linalg::ReadZeroPoint(z, data_type, 1, what + " zero point")[0];
  return p;
}

// Element i of an int8 or uint8 buffer as int32.
inline int32_t LoadQ(const void* p, NxElementType t, int64_t i) {
  return t == NX_TYPE_INT8 ? int32_t(static_cast<const int8_t*>(p)[i])
                           : int32_t(static_cast<const uint8_t*>(p)[i]);
}

// Rounds v (already divided by the output scale) half to even, adds the zero point and
// saturates to the 8-bit type, storing it at out[i].
inline void StoreQ(float v, int32_t zero_point, NxElementType t, void* out, int64_t i) {
  float r = std::nearbyint(v) + static_cast<float>(zero_point);
  if (std::isnan(r)) r = 0.f;
  if (t == NX_TYPE_INT8) {
    static_cast<int8_t*>(out)[i] = static_cast<int8_t>(std::clamp(r, -128.f, 127.f));
  } else {
    static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(std::clamp(r, 0.f, 255.f));
  }
}

}  // namespace nxrt::cpu::quantized

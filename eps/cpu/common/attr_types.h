// Element-type attributes (dtype, to, output_dtype, ...) read from untrusted models.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <string>

namespace nxrt::cpu {

// Attribute `name` as an element type (TensorProto.DataType numbering), `fallback` when absent.
// A number outside the enum fails kernel creation with a clear error: casting it to
// NxElementType would be undefined behaviour, and every switch over the type would miss it.
inline NxElementType AttrElementType(const ep::KernelInfo& info, const char* name,
                                     int64_t fallback) {
  const int64_t v = info.attr_int(name, fallback);
  if (v < NX_TYPE_UNDEFINED || v > NX_TYPE_INT2) {
    ep::Fail(NX_INVALID_MODEL, info.describe() + ": attribute '" + name + "' is " +
                                   std::to_string(v) + ", which is not an element type");
  }
  return static_cast<NxElementType>(v);
}

// The same for a required attribute.
inline NxElementType AttrElementType(const ep::KernelInfo& info, const char* name) {
  if (!info.has_attr(name)) {
    ep::Fail(NX_INVALID_MODEL, info.describe() + ": missing required attribute '" + name + "'");
  }
  return AttrElementType(info, name, NX_TYPE_UNDEFINED);
}

}  // namespace nxrt::cpu

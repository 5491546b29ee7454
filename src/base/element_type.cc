#include "base/element_type.h"

#include <string>

#include "base/error.h"

namespace nxrt {

const char* ElementTypeName(NxElementType type) {
  switch (type) {
    case NX_TYPE_FLOAT:
      return "float";
    case NX_TYPE_UINT8:
      return "uint8";
    case NX_TYPE_INT8:
      return "int8";
    case NX_TYPE_UINT16:
      return "uint16";
    case NX_TYPE_INT16:
      return "int16";
    case NX_TYPE_INT32:
      return "int32";
    case NX_TYPE_INT64:
      return "int64";
    case NX_TYPE_STRING:
      return "string";
    case NX_TYPE_BOOL:
      return "bool";
    case NX_TYPE_FLOAT16:
      return "float16";
    case NX_TYPE_DOUBLE:
      return "double";
    case NX_TYPE_UINT32:
      return "uint32";
    case NX_TYPE_UINT64:
      return "uint64";
    case NX_TYPE_COMPLEX64:
      return "complex64";
    case NX_TYPE_COMPLEX128:
      return "complex128";
    case NX_TYPE_BFLOAT16:
      return "bfloat16";
    case NX_TYPE_FLOAT8E4M3FN:
      return "float8e4m3fn";
    case NX_TYPE_FLOAT8E4M3FNUZ:
      return "float8e4m3fnuz";
    case NX_TYPE_FLOAT8E5M2:
      return "float8e5m2";
    case NX_TYPE_FLOAT8E5M2FNUZ:
      return "float8e5m2fnuz";
    case NX_TYPE_UINT4:
      return "uint4";
    case NX_TYPE_INT4:
      return "int4";
    case NX_TYPE_FLOAT4E2M1:
      return "float4e2m1";
    case NX_TYPE_FLOAT8E8M0:
      return "float8e8m0";
    case NX_TYPE_UINT2:
      return "uint2";
    case NX_TYPE_INT2:
      return "int2";
    default:
      return "undefined";
  }
}

size_t ElementSize(NxElementType type) {
  switch (type) {
    case NX_TYPE_FLOAT:
    case NX_TYPE_INT32:
    case NX_TYPE_UINT32:
      return 4;
    case NX_TYPE_DOUBLE:
    case NX_TYPE_INT64:
    case NX_TYPE_UINT64:
    case NX_TYPE_COMPLEX64:
      return 8;
    case NX_TYPE_COMPLEX128:
      return 16;
    case NX_TYPE_INT16:
    case NX_TYPE_UINT16:
    case NX_TYPE_FLOAT16:
    case NX_TYPE_BFLOAT16:
      return 2;
    case NX_TYPE_INT8:
    case NX_TYPE_UINT8:
    case NX_TYPE_BOOL:
    case NX_TYPE_FLOAT8E4M3FN:
    case NX_TYPE_FLOAT8E4M3FNUZ:
    case NX_TYPE_FLOAT8E5M2:
    case NX_TYPE_FLOAT8E5M2FNUZ:
    case NX_TYPE_FLOAT8E8M0:
      return 1;
    default:
      return 0;
  }
}

bool IsSubByteType(NxElementType type) { return ElementsPerByte(type) > 1; }

size_t ElementsPerByte(NxElementType type) {
  switch (type) {
    case NX_TYPE_INT4:
    case NX_TYPE_UINT4:
    case NX_TYPE_FLOAT4E2M1:
      return 2;
    case NX_TYPE_INT2:
    case NX_TYPE_UINT2:
      return 4;
    default:
      return 1;
  }
}

bool IsKnownElementType(int32_t value) { return value >= NX_TYPE_FLOAT && value <= NX_TYPE_INT2; }

size_t StorageBytes(NxElementType type, size_t count) {
  // No tensor can be larger than this (2^56 bytes); checking here keeps every size computed
  // from a hostile shape from wrapping around to a small allocation.
  constexpr size_t kMaxBytes = size_t{1} << 56;
  const size_t per_byte = ElementsPerByte(type);
  const size_t bytes = per_byte > 1        ? count / per_byte + (count % per_byte != 0)
                       : count > kMaxBytes ? kMaxBytes + 1
                                           : ElementSize(type) * count;
  if (bytes > kMaxBytes) {
    Throw(NX_OUT_OF_MEMORY, std::to_string(count) + " elements of " + ElementTypeName(type) +
                                " are more than any tensor can hold");
  }
  return bytes;
}

}  // namespace nxrt

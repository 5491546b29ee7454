// Facts about tensor element types: names, sizes, and the ONNX type-string parse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nxrt/nxrt_types.h"

namespace nxrt {

// "float", "int64", ... ("undefined" for unknown values).
const char* ElementTypeName(NxElementType type);

// Bytes per element; 0 for strings and sub-byte types.
size_t ElementSize(NxElementType type);

// True for the packed types: INT4, UINT4, FLOAT4E2M1 (two per byte), INT2, UINT2 (four).
bool IsSubByteType(NxElementType type);

// Elements stored in one byte: 2 for the 4-bit types, 4 for the 2-bit ones, else 1.
size_t ElementsPerByte(NxElementType type);

// True for every value of the enum this runtime can store.
bool IsKnownElementType(int32_t value);

// Bytes needed to store `count` elements of a non-string type.
size_t StorageBytes(NxElementType type, size_t count);

}  // namespace nxrt

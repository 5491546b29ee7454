// Element type <-> C++ type mapping and run-time dispatch over element types.
//
//   DispatchNumeric(type, [&]<class T>() { ... });   // float, double, ints, uints, half, bf16
// Throws a clear error for a type outside the chosen set.
#pragma once

#include <cstdint>
#include <string>

#include <nxrt/nxrt_ep.hpp>

#include "common/half.h"

namespace nxrt::cpu {

template <class T>
struct TypeOf;
#define NXRT_CPU_TYPE_OF(CT, ET) \
  template <>                    \
  struct TypeOf<CT> {            \
    static constexpr NxElementType value = ET; \
  };
NXRT_CPU_TYPE_OF(float, NX_TYPE_FLOAT)
NXRT_CPU_TYPE_OF(double, NX_TYPE_DOUBLE)
NXRT_CPU_TYPE_OF(int8_t, NX_TYPE_INT8)
NXRT_CPU_TYPE_OF(int16_t, NX_TYPE_INT16)
NXRT_CPU_TYPE_OF(int32_t, NX_TYPE_INT32)
NXRT_CPU_TYPE_OF(int64_t, NX_TYPE_INT64)
NXRT_CPU_TYPE_OF(uint8_t, NX_TYPE_UINT8)
NXRT_CPU_TYPE_OF(uint16_t, NX_TYPE_UINT16)
NXRT_CPU_TYPE_OF(uint32_t, NX_TYPE_UINT32)
NXRT_CPU_TYPE_OF(uint64_t, NX_TYPE_UINT64)
NXRT_CPU_TYPE_OF(bool, NX_TYPE_BOOL)
NXRT_CPU_TYPE_OF(Half, NX_TYPE_FLOAT16)
NXRT_CPU_TYPE_OF(BFloat16, NX_TYPE_BFLOAT16)
#undef NXRT_CPU_TYPE_OF

// Size in bytes of one element (0 for strings and sub-byte types).
inline size_t ElementSize(NxElementType t) {
  switch (t) {
    case NX_TYPE_FLOAT: case NX_TYPE_INT32: case NX_TYPE_UINT32: return 4;
    case NX_TYPE_DOUBLE: case NX_TYPE_INT64: case NX_TYPE_UINT64: case NX_TYPE_COMPLEX64: return 8;
    case NX_TYPE_COMPLEX128: return 16;
    case NX_TYPE_INT16: case NX_TYPE_UINT16: case NX_TYPE_FLOAT16: case NX_TYPE_BFLOAT16: return 2;
    case NX_TYPE_INT8: case NX_TYPE_UINT8: case NX_TYPE_BOOL: case NX_TYPE_FLOAT8E4M3FN:
    case NX_TYPE_FLOAT8E4M3FNUZ: case NX_TYPE_FLOAT8E5M2: case NX_TYPE_FLOAT8E5M2FNUZ:
    case NX_TYPE_FLOAT8E8M0: return 1;
    default: return 0;
  }
}

[[noreturn]] inline void UnsupportedType(const char* what, NxElementType t) {
  ep::Fail(NX_NOT_IMPLEMENTED,
           std::string(what) + ": element type " + ep::ElementTypeName(t) + " is not supported");
}

// Calls fn.template operator()<T>() for the C++ type T of `t`, among float types.
template <class Fn>
decltype(auto) DispatchFloat(NxElementType t, Fn&& fn) {
  switch (t) {
    case NX_TYPE_FLOAT: return fn.template operator()<float>();
    case NX_TYPE_DOUBLE: return fn.template operator()<double>();
    case NX_TYPE_FLOAT16: return fn.template operator()<Half>();
    case NX_TYPE_BFLOAT16: return fn.template operator()<BFloat16>();
    default: UnsupportedType("float dispatch", t);
  }
}

// Signed and unsigned integers (not bool).
template <class Fn>
decltype(auto) DispatchInteger(NxElementType t, Fn&& fn) {
  switch (t) {
    case NX_TYPE_INT8: return fn.template operator()<int8_t>();
    case NX_TYPE_INT16: return fn.template operator()<int16_t>();
    case NX_TYPE_INT32: return fn.template operator()<int32_t>();
    case NX_TYPE_INT64: return fn.template operator()<int64_t>();
    case NX_TYPE_UINT8: return fn.template operator()<uint8_t>();
    case NX_TYPE_UINT16: return fn.template operator()<uint16_t>();
    case NX_TYPE_UINT32: return fn.template operator()<uint32_t>();
    case NX_TYPE_UINT64: return fn.template operator()<uint64_t>();
    default: UnsupportedType("integer dispatch", t);
  }
}

// Floats and integers (not bool, not strings).
template <class Fn>
decltype(auto) DispatchNumeric(NxElementType t, Fn&& fn) {
  switch (t) {
    case NX_TYPE_FLOAT: case NX_TYPE_DOUBLE: case NX_TYPE_FLOAT16: case NX_TYPE_BFLOAT16:
      return DispatchFloat(t, fn);
    default: return DispatchInteger(t, fn);
  }
}

// Any fixed-size element type by its byte width, for ops that only move data (Transpose,
// Gather, Concat...): T is uint8_t/uint16_t/uint32_t/uint64_t or a 16-byte struct.
struct Bytes16 {
  uint64_t lo, hi;
};
template <class Fn>
decltype(auto) DispatchBySize(NxElementType t, Fn&& fn) {
  switch (ElementSize(t)) {
    case 1: return fn.template operator()<uint8_t>();
    case 2: return fn.template operator()<uint16_t>();
    case 4: return fn.template operator()<uint32_t>();
    case 8: return fn.template operator()<uint64_t>();
    case 16: return fn.template operator()<Bytes16>();
    default: UnsupportedType("data movement", t);
  }
}

}  // namespace nxrt::cpu

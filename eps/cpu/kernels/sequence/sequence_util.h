// Helpers shared by the sequence kernels: reading a position input, the element types whose
// tensors the kernels can slice and join, and the row copy behind ConcatFromSequence and
// SplitToSequence.
#pragma once

#include <cstdint>
#include <cstring>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

#include "common/dispatch.h"

namespace nxrt::cpu::sequence {

// The value of a position input: an int32 or int64 scalar (a one-element tensor is accepted
// too, as the reference implementation does).
inline int64_t ReadPosition(const ep::ConstTensor& t, const char* op) {
  if (t.size() != 1) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": 'position' must be a scalar, got " +
                                      std::to_string(t.size()) + " elements");
  }
  switch (t.type()) {
    case NX_TYPE_INT32:
      return *t.data<int32_t>();
    case NX_TYPE_INT64:
      return *t.data<int64_t>();
    default:
      ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": 'position' must be int32 or int64, got " +
                                        ep::ElementTypeName(t.type()));
  }
}

// Maps `pos` from [-n, n - 1] (or [-n, n] when `allow_end`, for inserting at the back) to a
// non-negative index; anything else is an error, since it would address a missing element.
inline size_t NormalizePosition(int64_t pos, size_t length, bool allow_end, const char* op) {
  const int64_t n = static_cast<int64_t>(length);
  const int64_t hi = allow_end ? n : n - 1;
  if (hi < -n) ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": the sequence is empty");
  if (pos < -n || pos > hi) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": position " + std::to_string(pos) +
                                      " is out of range [" + std::to_string(-n) + ", " +
                                      std::to_string(hi) + "] for a sequence of length " +
                                      std::to_string(length));
  }
  return static_cast<size_t>(pos < 0 ? pos + n : pos);
}

// Types ConcatFromSequence and SplitToSequence slice and join: every whole-byte type and strings
// (the packed 4-bit types are not allowed by ONNX for them).
inline std::vector<NxElementType> SliceableTypes() {
  return {NX_TYPE_FLOAT,        NX_TYPE_DOUBLE,         NX_TYPE_FLOAT16,    NX_TYPE_BFLOAT16,
          NX_TYPE_INT8,         NX_TYPE_INT16,          NX_TYPE_INT32,      NX_TYPE_INT64,
          NX_TYPE_UINT8,        NX_TYPE_UINT16,         NX_TYPE_UINT32,     NX_TYPE_UINT64,
          NX_TYPE_BOOL,         NX_TYPE_STRING,         NX_TYPE_COMPLEX64,  NX_TYPE_COMPLEX128,
          NX_TYPE_FLOAT8E4M3FN, NX_TYPE_FLOAT8E4M3FNUZ, NX_TYPE_FLOAT8E5M2, NX_TYPE_FLOAT8E5M2FNUZ};
}

// One side of a row copy: a tensor, where its first row starts and how far apart rows are (all
// in elements).
struct Rows {
  int64_t offset;
  int64_t stride;
};

// Copies `rows` runs of `run` elements from `src` to `dst` (same element type). Both ops reduce
// to this: along the outer axes every tensor is a stack of rows, and each piece is one
// contiguous run (its length on the axis times the inner size) of a row.
inline void CopyRows(const ep::ConstTensor& src, Rows from, const ep::Tensor& dst, Rows to,
                     int64_t rows, int64_t run) {
  if (rows <= 0 || run <= 0) return;
  const NxElementType type = src.type();
  if (type == NX_TYPE_STRING) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < run; ++k) {
        dst.set_string(static_cast<size_t>(to.offset + r * to.stride + k),
                       src.string(static_cast<size_t>(from.offset + r * from.stride + k)));
      }
    }
    return;
  }
  const int64_t es = static_cast<int64_t>(ElementSize(type));
  if (es == 0) UnsupportedType("sequence copy", type);
  const auto* s = static_cast<const uint8_t*>(src.raw());
  auto* d = static_cast<uint8_t*>(dst.mutable_raw());
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(d + (to.offset + r * to.stride) * es, s + (from.offset + r * from.stride) * es,
                static_cast<size_t>(run * es));
  }
}

}  // namespace nxrt::cpu::sequence

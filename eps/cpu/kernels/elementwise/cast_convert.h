// Element conversion between any two supported tensor element types (except strings), shared by
// Cast, CastLike and the quantisation kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nxrt/nxrt_ep.hpp>

#include "common/float_to_int.h"
#include "kernels/elementwise/float_formats.h"

namespace nxrt::cpu::elementwise {

// SaturatingFloatToInt (common/float_to_int.h) is the float -> integer conversion of Cast.
using nxrt::cpu::SaturatingFloatToInt;

// True for the types ConvertArray handles: numbers, bool, float16 / bfloat16, float8 (incl.
// E8M0), float4, int4 / uint4, int2 / uint2.
bool IsConvertible(NxElementType t);

// Converts n elements of type `src_type` at `src` into `dst` (type `dst_type`), following ONNX
// Cast: numpy-like static conversions, round-to-nearest-even into narrower floats, and the
// float8 saturation rules (`saturate`); `round` is how values become FLOAT8E8M0 (Cast's
// round_mode). Sub-byte types are packed (4-bit two per byte, 2-bit four per byte, lowest
// bits first); `dst` must have room for the whole packed output. Parallel over `threads`.
void ConvertArray(const void* src, NxElementType src_type, void* dst, NxElementType dst_type,
                  int64_t n, bool saturate, int threads, E8M0Round round = E8M0Round::kUp);

// Elements [begin, begin + m) of a tensor of type `t` (any convertible type) as floats.
void LoadFloats(const void* src, NxElementType t, int64_t begin, int64_t m, float* out);

// Writes m floats into elements [begin, begin + m) of a tensor of type `t`. Sub-byte outputs
// are written element by element: concurrent callers must own whole bytes.
void StoreFloats(const float* in, int64_t m, void* dst, NxElementType t, int64_t begin,
                 bool saturate);

}  // namespace nxrt::cpu::elementwise

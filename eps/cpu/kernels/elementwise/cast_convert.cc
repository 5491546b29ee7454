// Element conversions for Cast / CastLike / quantisation. "Standard" types (float, double,
// float16, bfloat16, 8..64-bit integers, bool) convert directly with typed loops; float8 / float4
// and int4 / uint4 / int2 / uint2 / E8M0 sources are first decoded block-wise into float / int8 /
// uint8, and those destinations are encoded element by element.
#include "kernels/elementwise/cast_convert.h"

#include <array>
#include <cstring>
#include <type_traits>

#include "kernels/elementwise/ew_common.h"
#include "kernels/elementwise/float_formats.h"
#include "kernels/elementwise/half_arrays.h"

namespace nxrt::cpu::elementwise {
namespace {

bool IsStd(NxElementType t) {
  switch (t) {
    case NX_TYPE_FLOAT:
    case NX_TYPE_DOUBLE:
    case NX_TYPE_FLOAT16:
    case NX_TYPE_BFLOAT16:
    case NX_TYPE_INT8:
    case NX_TYPE_INT16:
    case NX_TYPE_INT32:
    case NX_TYPE_INT64:
    case NX_TYPE_UINT8:
    case NX_TYPE_UINT16:
    case NX_TYPE_UINT32:
    case NX_TYPE_UINT64:
    case NX_TYPE_BOOL:
      return true;
    default:
      return false;
  }
}

template <class Fn>
void DispatchStd(NxElementType t, Fn&& fn) {
  switch (t) {
    case NX_TYPE_FLOAT:
      return fn.template operator()<float>();
    case NX_TYPE_DOUBLE:
      return fn.template operator()<double>();
    case NX_TYPE_FLOAT16:
      return fn.template operator()<Half>();
    case NX_TYPE_BFLOAT16:
      return fn.template operator()<BFloat16>();
    case NX_TYPE_INT8:
      return fn.template operator()<int8_t>();
    case NX_TYPE_INT16:
      return fn.template operator()<int16_t>();
    case NX_TYPE_INT32:
      return fn.template operator()<int32_t>();
    case NX_TYPE_INT64:
      return fn.template operator()<int64_t>();
    case NX_TYPE_UINT8:
      return fn.template operator()<uint8_t>();
    case NX_TYPE_UINT16:
      return fn.template operator()<uint16_t>();
    case NX_TYPE_UINT32:
      return fn.template operator()<uint32_t>();
    case NX_TYPE_UINT64:
      return fn.template operator()<uint64_t>();
    case NX_TYPE_BOOL:
      return fn.template operator()<bool>();
    default:
      UnsupportedType("Cast", t);
  }
}

// A float as a narrow integer (8/16-bit, uint32): numpy's astype goes through int64 and keeps
// the low bits (300.0 -> int8 44); values beyond int64 (and infinities) saturate to D's range
// instead of wrapping an arbitrary int64, and NaN becomes 0.
template <class D>
inline D FloatToNarrowInt(double f) {
  const int64_t wide = SaturatingFloatToInt<int64_t>(f);
  const bool beyond_int64 = std::fabs(f) >= 9223372036854775808.0;  // 2^63
  if (beyond_int64) return f < 0 ? std::numeric_limits<D>::min() : std::numeric_limits<D>::max();
  return static_cast<D>(wide);
}

// One value, with numpy's astype semantics where C++ leaves things undefined: float -> narrow
// integer goes through int64 and wraps, negative float -> uint64 wraps. Where numpy itself is
// undefined, Cast is defined here as: NaN -> 0 for every integer type; +-inf and values outside
// the (int64 for narrow types) range saturate to the destination's minimum / maximum.
template <class D, class S>
inline D CastValue(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<D, bool>) {
    return As<ComputeT<S>>(v) != ComputeT<S>(0);
  } else if constexpr (std::is_same_v<S, bool>) {
    return As<D>(v ? 1 : 0);
  } else if constexpr (kIsHalfLike<D>) {
    if constexpr (std::is_same_v<S, double> || (std::is_integral_v<S> && sizeof(S) >= 4)) {
      // Round once from the exact value (going through float could round twice).
      D out;
      out.bits = static_cast<uint16_t>(EncodeMini(static_cast<double>(v),
                                                  std::is_same_v<D, Half> ? kFloat16 : kBFloat16,
                                                  /*saturate=*/false));
      return out;
    } else {
      return D(As<float>(v));
    }
  } else if constexpr (std::is_integral_v<D> && kIsFloatLike<S>) {
    const double f = static_cast<double>(As<ComputeT<S>>(v));
    if constexpr (std::is_same_v<D, uint64_t>) {
      return f < 0 ? static_cast<D>(SaturatingFloatToInt<int64_t>(f))
                   : SaturatingFloatToInt<uint64_t>(f);
    } else if constexpr (std::is_same_v<D, int32_t> || std::is_same_v<D, int64_t>) {
      return SaturatingFloatToInt<D>(f);
    } else {
      return FloatToNarrowInt<D>(f);
    }
  } else {
    return As<D>(v);
  }
}

template <class S, class D>
void StdLoop(const S* s, D* d, int64_t n) {
  if constexpr (std::is_same_v<S, float> && std::is_same_v<D, Half>) {
    FromFloat(s, d, n);
  } else if constexpr (std::is_same_v<S, Half> && std::is_same_v<D, float>) {
    ToFloat(s, d, n);
  } else if constexpr (std::is_same_v<S, BFloat16> && std::is_same_v<D, float>) {
    ToFloat(s, d, n);
  } else if constexpr (std::is_same_v<S, D>) {
    std::memcpy(d, s, sizeof(S) * n);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = CastValue<D>(s[i]);
  }
}

// Decoding tables for the 8-bit (and 4-bit) float formats.
const float* MiniTable(NxElementType t) {
  static const auto tables = [] {
    std::array<std::array<float, 256>, 5> tb{};
    const MiniFloat* fmts[5] = {&kE4M3FN, &kE4M3FNUZ, &kE5M2, &kE5M2FNUZ, &kE2M1};
    for (int f = 0; f < 5; ++f) {
      int codes = 1 << fmts[f]->total_bits();
      for (int c = 0; c < codes; ++c) tb[f][c] = DecodeMini(static_cast<uint32_t>(c), *fmts[f]);
    }
    return tb;
  }();
  switch (t) {
    case NX_TYPE_FLOAT8E4M3FN:
      return tables[0].data();
    case NX_TYPE_FLOAT8E4M3FNUZ:
      return tables[1].data();
    case NX_TYPE_FLOAT8E5M2:
      return tables[2].data();
    case NX_TYPE_FLOAT8E5M2FNUZ:
      return tables[3].data();
    case NX_TYPE_FLOAT4E2M1:
      return tables[4].data();
    default:
      return nullptr;
  }
}

// The standard type a non-standard source decodes to.
NxElementType DecodedType(NxElementType t) {
  if (t == NX_TYPE_INT4 || t == NX_TYPE_INT2) return NX_TYPE_INT8;
  if (t == NX_TYPE_UINT4 || t == NX_TYPE_UINT2) return NX_TYPE_UINT8;
  return NX_TYPE_FLOAT;
}

// Decodes elements [begin, begin + m) of a non-standard tensor into `out` (DecodedType).
void Decode(const void* src, NxElementType t, int64_t begin, int64_t m, void* out) {
  const uint8_t* p = static_cast<const uint8_t*>(src);
  if (t == NX_TYPE_INT4) {
    int8_t* o = static_cast<int8_t*>(out);
    for (int64_t i = 0; i < m; ++i) o[i] = Int4At(p, begin + i);
  } else if (t == NX_TYPE_UINT4) {
    uint8_t* o = static_cast<uint8_t*>(out);
    for (int64_t i = 0; i < m; ++i) o[i] = UInt4At(p, begin + i);
  } else if (t == NX_TYPE_INT2) {
    int8_t* o = static_cast<int8_t*>(out);
    for (int64_t i = 0; i < m; ++i) o[i] = Int2At(p, begin + i);
  } else if (t == NX_TYPE_UINT2) {
    uint8_t* o = static_cast<uint8_t*>(out);
    for (int64_t i = 0; i < m; ++i) o[i] = UInt2At(p, begin + i);
  } else if (t == NX_TYPE_FLOAT8E8M0) {
    float* o = static_cast<float*>(out);
    for (int64_t i = 0; i < m; ++i) o[i] = DecodeE8M0(p[begin + i]);
  } else if (t == NX_TYPE_FLOAT4E2M1) {
    const float* lut = MiniTable(t);
    float* o = static_cast<float*>(out);
    for (int64_t i = 0; i < m; ++i) o[i] = lut[UInt4At(p, begin + i)];
  } else {
    const float* lut = MiniTable(t);
    float* o = static_cast<float*>(out);
    for (int64_t i = 0; i < m; ++i) o[i] = lut[p[begin + i]];
  }
}

// Converts m standard-typed elements at `s` into elements [dst_off, dst_off + m) of `dst`.
void FromStd(const void* s, NxElementType st, void* dst, NxElementType dt, int64_t dst_off,
             int64_t m, bool saturate, E8M0Round round = E8M0Round::kUp) {
  DispatchStd(st, [&]<class S>() {
    const S* src = static_cast<const S*>(s);
    if (IsStd(dt)) {
      DispatchStd(dt, [&]<class D>() { StdLoop(src, static_cast<D*>(dst) + dst_off, m); });
      return;
    }
    uint8_t* out = static_cast<uint8_t*>(dst);
    if (const MiniFloat* fmt = MiniFloatOf(dt)) {
      if (dt == NX_TYPE_FLOAT4E2M1) {
        for (int64_t i = 0; i < m; ++i) {
          SetNibble(out, dst_off + i, EncodeMini(CastValue<double>(src[i]), *fmt, saturate));
        }
      } else {
        for (int64_t i = 0; i < m; ++i) {
          out[dst_off + i] =
              static_cast<uint8_t>(EncodeMini(CastValue<double>(src[i]), *fmt, saturate));
        }
      }
    } else if (dt == NX_TYPE_INT4 || dt == NX_TYPE_UINT4) {
      // Keep the low four bits (two's complement wrap-around, like any narrowing integer cast).
      for (int64_t i = 0; i < m; ++i) {
        SetNibble(out, dst_off + i, static_cast<uint32_t>(CastValue<int64_t>(src[i]) & 0xF));
      }
    } else if (dt == NX_TYPE_INT2 || dt == NX_TYPE_UINT2) {
      for (int64_t i = 0; i < m; ++i) {
        SetCrumb(out, dst_off + i, static_cast<uint32_t>(CastValue<int64_t>(src[i]) & 0x3));
      }
    } else if (dt == NX_TYPE_FLOAT8E8M0) {
      // The reference's rule works on float32 bits: float16 and small integers convert to
      // float exactly first.
      for (int64_t i = 0; i < m; ++i) {
        out[dst_off + i] = EncodeE8M0(CastValue<float>(src[i]), saturate, round);
      }
    } else {
      UnsupportedType("Cast destination", dt);
    }
  });
}

void ConvertRange(const void* src, NxElementType st, void* dst, NxElementType dt, int64_t b,
                  int64_t e, bool saturate, E8M0Round round) {
  if (IsStd(st)) {
    const size_t es = ElementSize(st);
    FromStd(static_cast<const uint8_t*>(src) + b * static_cast<int64_t>(es), st, dst, dt, b, e - b,
            saturate, round);
    return;
  }
  constexpr int64_t kBlock = 256;  // a multiple of 4, so sub-byte destinations stay byte-aligned
  alignas(32) float buf[kBlock];
  const NxElementType mid = DecodedType(st);
  for (int64_t i = b; i < e; i += kBlock) {
    const int64_t m = std::min(kBlock, e - i);
    Decode(src, st, i, m, buf);
    FromStd(buf, mid, dst, dt, i, m, saturate, round);
  }
}

}  // namespace

void LoadFloats(const void* src, NxElementType t, int64_t begin, int64_t m, float* out) {
  if (IsStd(t)) {
    const size_t es = ElementSize(t);
    FromStd(static_cast<const uint8_t*>(src) + begin * static_cast<int64_t>(es), t, out,
            NX_TYPE_FLOAT, 0, m, true);
    return;
  }
  const NxElementType mid = DecodedType(t);
  if (mid == NX_TYPE_FLOAT) {
    Decode(src, t, begin, m, out);
    return;
  }
  constexpr int64_t kBlock = 256;
  alignas(32) int8_t buf[kBlock];
  for (int64_t i = 0; i < m; i += kBlock) {
    const int64_t k = std::min(kBlock, m - i);
    Decode(src, t, begin + i, k, buf);
    FromStd(buf, mid, out + i, NX_TYPE_FLOAT, 0, k, true);
  }
}

void StoreFloats(const float* in, int64_t m, void* dst, NxElementType t, int64_t begin,
                 bool saturate) {
  if (!IsConvertible(t)) UnsupportedType("store", t);
  FromStd(in, NX_TYPE_FLOAT, dst, t, begin, m, saturate);
}

bool IsConvertible(NxElementType t) {
  return IsStd(t) || MiniFloatOf(t) != nullptr || t == NX_TYPE_INT4 || t == NX_TYPE_UINT4 ||
         t == NX_TYPE_INT2 || t == NX_TYPE_UINT2 || t == NX_TYPE_FLOAT8E8M0;
}

void ConvertArray(const void* src, NxElementType src_type, void* dst, NxElementType dst_type,
                  int64_t n, bool saturate, int threads, E8M0Round round) {
  if (!IsConvertible(src_type)) UnsupportedType("Cast source", src_type);
  if (!IsConvertible(dst_type)) UnsupportedType("Cast destination", dst_type);
  if (n <= 0) return;
  // Work in groups of four elements so that no two threads share a byte of packed output.
  const int64_t quads = (n + 3) / 4;
  ParallelFor(ThreadsFor(threads, n), quads, kGrain / 4, [&](int64_t qb, int64_t qe) {
    ConvertRange(src, src_type, dst, dst_type, 4 * qb, std::min(4 * qe, n), saturate, round);
  });
  ClearPackedTail(dst_type, dst, n);
}

}  // namespace nxrt::cpu::elementwise

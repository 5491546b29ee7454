// The small floating-point formats (float8 E4M3FN / E4M3FNUZ / E5M2 / E5M2FNUZ, float4 E2M1,
// and the exponent-only float8 E8M0) and the sub-byte integers (int4 / uint4, int2 / uint2):
// decoding to float, encoding from double with round-to-nearest-even and ONNX's saturation
// rules, and 4-bit / 2-bit packing.
//
// The encoder is generic over (exponent bits, mantissa bits, bias, special values) and works in
// double, where every value of these formats (and of float16 / bfloat16) is exact, so one
// rounding step produces the correctly rounded result. It also serves double -> float16 /
// bfloat16, which must not round twice through float.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu::elementwise {

// How a format encodes specials.
enum class Specials {
  kIeee,  // inf = max exponent with zero mantissa, NaN = max exponent with nonzero mantissa
  kFn,    // no inf; NaN = all exponent and mantissa bits set (either sign)
  kFnuz,  // no inf, no negative zero; NaN = sign bit alone (0x80)
  kNone,  // no inf, no NaN (float4 E2M1)
};

struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  Specials specials;

  int total_bits() const { return 1 + exp_bits + man_bits; }
  uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  // Largest finite code (without sign).
  uint32_t max_code() const {
    uint32_t all = sign_bit() - 1;
    switch (specials) {
      case Specials::kIeee:
        return all - (1u << man_bits);  // exponent all-ones is special
      case Specials::kFn:
        return all - 1;  // all-ones is NaN
      default:
        return all;
    }
  }
  uint32_t nan_code(bool negative) const {
    switch (specials) {
      case Specials::kIeee:
        return (negative ? sign_bit() : 0) | (((1u << exp_bits) - 1) << man_bits) |
               (1u << (man_bits - 1));
      case Specials::kFn:
        return (negative ? sign_bit() : 0) | (sign_bit() - 1);
      case Specials::kFnuz:
        return sign_bit();
      default:
        return 0;
    }
  }
  uint32_t inf_code(bool negative) const {
    return (negative ? sign_bit() : 0) | (((1u << exp_bits) - 1) << man_bits);
  }
};

inline constexpr MiniFloat kE4M3FN{4, 3, 7, Specials::kFn};
inline constexpr MiniFloat kE4M3FNUZ{4, 3, 8, Specials::kFnuz};
inline constexpr MiniFloat kE5M2{5, 2, 15, Specials::kIeee};
inline constexpr MiniFloat kE5M2FNUZ{5, 2, 16, Specials::kFnuz};
inline constexpr MiniFloat kE2M1{2, 1, 1, Specials::kNone};
inline constexpr MiniFloat kFloat16{5, 10, 15, Specials::kIeee};
inline constexpr MiniFloat kBFloat16{8, 7, 127, Specials::kIeee};

// The format of a float8 / float4 element type, or nullptr.
inline const MiniFloat* MiniFloatOf(NxElementType t) {
  switch (t) {
    case NX_TYPE_FLOAT8E4M3FN:
      return &kE4M3FN;
    case NX_TYPE_FLOAT8E4M3FNUZ:
      return &kE4M3FNUZ;
    case NX_TYPE_FLOAT8E5M2:
      return &kE5M2;
    case NX_TYPE_FLOAT8E5M2FNUZ:
      return &kE5M2FNUZ;
    case NX_TYPE_FLOAT4E2M1:
      return &kE2M1;
    default:
      return nullptr;
  }
}

inline float DecodeMini(uint32_t code, const MiniFloat& f) {
  const bool neg = (code & f.sign_bit()) != 0;
  const uint32_t mag = code & (f.sign_bit() - 1);
  const uint32_t exp = mag >> f.man_bits;
  const uint32_t man = mag & ((1u << f.man_bits) - 1);
  const uint32_t exp_max = (1u << f.exp_bits) - 1;
  switch (f.specials) {
    case Specials::kIeee:
      if (exp == exp_max) {
        if (man != 0) return std::nanf("");
        return neg ? -INFINITY : INFINITY;
      }
      break;
    case Specials::kFn:
      if (mag == f.sign_bit() - 1) return std::nanf("");
      break;
    case Specials::kFnuz:
      if (code == f.sign_bit()) return std::nanf("");
      break;
    case Specials::kNone:
      break;
  }
  double v = exp == 0 ? std::ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits)
                      : std::ldexp(static_cast<double>(man | (1u << f.man_bits)),
                                   static_cast<int>(exp) - f.bias - f.man_bits);
  return static_cast<float>(neg ? -v : v);
}

// Rounds v to the format (nearest even). Out-of-range values (after rounding) and infinities
// become the largest finite value when `saturate`, else inf where the format has one, else NaN.
// Formats without NaN (E2M1) always saturate and map NaN to 0 with the input's sign bit set
// (what ml_dtypes, the reference, produces).
inline uint32_t EncodeMini(double v, const MiniFloat& f, bool saturate) {
  const bool neg = std::signbit(v);
  const uint32_t sign = neg ? f.sign_bit() : 0;
  if (std::isnan(v)) {
    if (f.specials == Specials::kNone) return f.sign_bit();
    return f.nan_code(neg);
  }
  const bool sat = saturate || f.specials == Specials::kNone;
  auto overflow = [&]() -> uint32_t {
    if (sat) return sign | f.max_code();
    if (f.specials == Specials::kIeee) return f.inf_code(neg);
    return f.nan_code(neg);
  };
  double a = std::fabs(v);
  if (std::isinf(a)) return overflow();
  if (a == 0) return f.specials == Specials::kFnuz ? 0 : sign;
  const int emin = 1 - f.bias;  // exponent of the smallest normal
  int e2 = 0;
  std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
  int e = e2 - 1;      // a = 1.xxx * 2^e
  if (e < emin) e = emin;
  // Scale so that one unit in the last place of the target is 1, and round to an integer.
  double q = std::nearbyint(std::ldexp(a, f.man_bits - e));
  uint64_t qi = static_cast<uint64_t>(q);
  if (qi == 0) return f.specials == Specials::kFnuz ? 0 : sign;
  // Rounding may carry into the next binade.
  if (qi >= (2ull << f.man_bits)) {
    qi >>= 1;
    ++e;
  }
  uint32_t code;
  if (qi < (1ull << f.man_bits)) {  // subnormal (only possible at e == emin)
    code = static_cast<uint32_t>(qi);
  } else {
    uint32_t exp_field = static_cast<uint32_t>(e + f.bias);
    if (exp_field >= (1u << f.exp_bits)) return overflow();
    code = (exp_field << f.man_bits) | static_cast<uint32_t>(qi - (1ull << f.man_bits));
  }
  if (code > f.max_code()) return overflow();
  return sign | code;
}

// ---- Sub-byte integers (two per byte, low nibble first) ----------------------------------

inline int8_t Int4At(const uint8_t* p, int64_t i) {
  uint8_t nib = (p[i >> 1] >> ((i & 1) * 4)) & 0xF;
  return static_cast<int8_t>(static_cast<int8_t>(nib << 4) >> 4);
}
inline uint8_t UInt4At(const uint8_t* p, int64_t i) { return (p[i >> 1] >> ((i & 1) * 4)) & 0xF; }
// Stores the low 4 bits of v as element i. Callers fill whole bytes in order or zero first.
inline void SetNibble(uint8_t* p, int64_t i, uint32_t v) {
  uint8_t& b = p[i >> 1];
  if (i & 1) {
    b = static_cast<uint8_t>((b & 0x0F) | ((v & 0xF) << 4));
  } else {
    b = static_cast<uint8_t>((b & 0xF0) | (v & 0xF));
  }
}

// ---- 2-bit integers (four per byte, lowest bits first) -------------------------------------

inline int8_t Int2At(const uint8_t* p, int64_t i) {
  const uint8_t v = (p[i >> 2] >> ((i & 3) * 2)) & 0x3;
  return static_cast<int8_t>(static_cast<int8_t>(v << 6) >> 6);
}
inline uint8_t UInt2At(const uint8_t* p, int64_t i) { return (p[i >> 2] >> ((i & 3) * 2)) & 0x3; }
// Stores the low 2 bits of v as element i. Callers fill whole bytes in order or zero first.
inline void SetCrumb(uint8_t* p, int64_t i, uint32_t v) {
  const int shift = static_cast<int>(i & 3) * 2;
  uint8_t& b = p[i >> 2];
  b = static_cast<uint8_t>((b & ~(0x3u << shift)) | ((v & 0x3u) << shift));
}

// Elements per byte: 2 for the 4-bit types, 4 for the 2-bit integers, else 1.
inline int64_t PerByte(NxElementType t) {
  switch (t) {
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

inline bool IsSubByte(NxElementType t) { return PerByte(t) > 1; }

// Bytes needed for n elements of type t (strings excluded).
inline int64_t StorageBytes(NxElementType t, int64_t n, size_t element_size) {
  const int64_t per = PerByte(t);
  return per > 1 ? (n + per - 1) / per : n * static_cast<int64_t>(element_size);
}

// Clears the unused high bits of the last byte of n packed elements (ONNX stores them as 0).
inline void ClearPackedTail(NxElementType t, void* data, int64_t n) {
  const int64_t per = PerByte(t);
  if (per == 1 || n % per == 0) return;
  const int used_bits = static_cast<int>(n % per) * static_cast<int>(8 / per);
  static_cast<uint8_t*>(data)[n / per] &= static_cast<uint8_t>((1u << used_bits) - 1);
}

// ---- FLOAT8E8M0: an unsigned power of two, 2^(code - 127); code 0xFF is NaN ---------------

// How Cast rounds a float that is not a power of two (its `round_mode` attribute).
enum class E8M0Round { kUp, kDown, kNearest };

inline float DecodeE8M0(uint8_t code) {
  if (code == 0xFF) return std::nanf("");
  // 2^-127 is a float32 subnormal; the rest are normal numbers with an empty mantissa.
  return code == 0 ? std::ldexp(1.f, -127) : std::ldexp(1.f, static_cast<int>(code) - 127);
}

// The exponent of |v| (float32), rounded as `round` says; NaN and infinities give 0xFF. With
// `saturate` a value that would round past the largest power (2^127) stays at it; zeros and
// subnormals take the smallest code (or round up to 1). This is the reference's bit-level rule.
inline uint8_t EncodeE8M0(float v, bool saturate, E8M0Round round) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  uint32_t exp = (bits >> 23) & 0xFF;
  if (exp == 0xFF) return 0xFF;
  bool up = false;
  if (round == E8M0Round::kUp) {
    up = (bits & 0x7FFFFF) != 0;
  } else if (round == E8M0Round::kNearest) {
    const bool guard = (bits & 0x400000) != 0, rest = (bits & 0x3FFFFF) != 0;
    up = guard && (rest || exp > 0);
  }
  if (up && !(saturate && exp == 0xFE)) ++exp;
  return static_cast<uint8_t>(exp);
}

}  // namespace nxrt::cpu::elementwise

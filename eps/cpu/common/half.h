// 16-bit floating-point storage types (IEEE half and bfloat16) with conversions to float.
// Arithmetic is done in float: convert, compute, convert back (round to nearest even).
#pragma once

#include <cstdint>
#include <cstring>

namespace nxrt::cpu {

inline float Float32FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint32_t BitsFromFloat32(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(FromFloat(f)) {}
  operator float() const { return ToFloat(bits); }

  static float ToFloat(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return Float32FromBits(sign | 0x7f800000u | (mant << 13));  // inf/nan
    if (exp == 0) {
      if (mant == 0) return Float32FromBits(sign);
      // subnormal: value = mant * 2^-24
      float f = static_cast<float>(mant) * (1.0f / 16777216.0f);
      return sign ? -f : f;
    }
    return Float32FromBits(sign | ((exp + 112) << 23) | (mant << 13));
  }
  static uint16_t FromFloat(float f) {
    uint32_t x = BitsFromFloat32(f);
    uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00 : 0x7c00);  // nan / inf
    if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
    if (abs < 0x38800000u) {                       // below the smallest normal half (2^-14)
      // subnormal: round abs / 2^-24 to nearest even
      float v = Float32FromBits(abs) * 16777216.0f;
      uint32_t m = static_cast<uint32_t>(v);
      float rem = v - static_cast<float>(m);
      if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
      return sign | static_cast<uint16_t>(m);
    }
    uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even
    return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(FromFloat(f)) {}
  operator float() const { return ToFloat(bits); }

  static float ToFloat(uint16_t b) { return Float32FromBits(static_cast<uint32_t>(b) << 16); }
  static uint16_t FromFloat(float f) {
    uint32_t x = BitsFromFloat32(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
    uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(rounded >> 16);
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace nxrt::cpu

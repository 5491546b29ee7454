// The CPU EP's 2-bit integer packing and FLOAT8E8M0 conversions (kernels/elementwise/
// float_formats.h), which Cast, CastLike, QuantizeLinear and DequantizeLinear use. The ONNX node
// tests cover Cast's default round mode; the other modes and saturation are checked here against
// values worked out by hand from the rule (E8M0 holds 2^(code - 127)).
#include "kernels/elementwise/float_formats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace nxrt::cpu::elementwise {
namespace {

TEST(TwoBitPacking, ElementsAreFourPerByteLowestBitsFirst) {
  std::vector<uint8_t> bytes(2, 0xAA);  // garbage that every store must overwrite
  const int32_t values[] = {0, 1, -2, -1, 1};
  for (int i = 0; i < 5; ++i) SetCrumb(bytes.data(), i, static_cast<uint32_t>(values[i]));
  ClearPackedTail(NX_TYPE_INT2, bytes.data(), 5);
  EXPECT_EQ(bytes[0], 0xE4);  // 0b11'10'01'00
  EXPECT_EQ(bytes[1], 0x01);  // the three unused crumbs are cleared
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Int2At(bytes.data(), i), values[i]) << i;
  EXPECT_EQ(UInt2At(bytes.data(), 2), 2);
  EXPECT_EQ(UInt2At(bytes.data(), 3), 3);
  EXPECT_EQ(StorageBytes(NX_TYPE_UINT2, 5, 0), 2);
  EXPECT_EQ(StorageBytes(NX_TYPE_INT2, 8, 0), 2);
  EXPECT_EQ(StorageBytes(NX_TYPE_INT4, 5, 0), 3);
  EXPECT_TRUE(IsSubByte(NX_TYPE_UINT2));
  EXPECT_FALSE(IsSubByte(NX_TYPE_FLOAT8E8M0));
}

TEST(TwoBitPacking, TailClearingKeepsUsedBitsOfEveryLength) {
  for (int n = 1; n <= 8; ++n) {
    std::vector<uint8_t> bytes(2, 0xFF);
    ClearPackedTail(NX_TYPE_UINT2, bytes.data(), n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(UInt2At(bytes.data(), i), 3) << n << " " << i;
    const int last = (n - 1) / 4;
    for (int i = n; i < 4 * (last + 1); ++i)
      EXPECT_EQ(UInt2At(bytes.data(), i), 0) << n << " " << i;
  }
}

TEST(E8M0, DecodesPowersOfTwoAndNaN) {
  EXPECT_EQ(DecodeE8M0(127), 1.0f);
  EXPECT_EQ(DecodeE8M0(128), 2.0f);
  EXPECT_EQ(DecodeE8M0(125), 0.25f);
  EXPECT_EQ(DecodeE8M0(254), std::ldexp(1.0f, 127));
  EXPECT_EQ(DecodeE8M0(0), std::ldexp(1.0f, -127));  // a float32 subnormal
  EXPECT_TRUE(std::isnan(DecodeE8M0(0xFF)));
}

TEST(E8M0, RoundModes) {
  // 1.1 lies between 2^0 and 2^1; 1.6 is past the midpoint 1.5; 1.5 is exactly on it.
  EXPECT_EQ(EncodeE8M0(1.1f, true, E8M0Round::kUp), 128);
  EXPECT_EQ(EncodeE8M0(1.1f, true, E8M0Round::kDown), 127);
  EXPECT_EQ(EncodeE8M0(1.1f, true, E8M0Round::kNearest), 127);
  EXPECT_EQ(EncodeE8M0(1.6f, true, E8M0Round::kNearest), 128);
  EXPECT_EQ(EncodeE8M0(1.5f, true, E8M0Round::kNearest), 128);
  // Powers of two are exact in every mode; the sign is dropped.
  for (E8M0Round r : {E8M0Round::kUp, E8M0Round::kDown, E8M0Round::kNearest}) {
    EXPECT_EQ(EncodeE8M0(0.25f, true, r), 125);
    EXPECT_EQ(EncodeE8M0(-8.0f, true, r), 130);
  }
  // 0.124 rounds up to 0.125 = 2^-3 and down to 2^-4.
  EXPECT_EQ(EncodeE8M0(0.124f, true, E8M0Round::kUp), 124);
  EXPECT_EQ(EncodeE8M0(0.124f, true, E8M0Round::kDown), 123);
  // Zero takes the smallest code; NaN and infinities the NaN code.
  EXPECT_EQ(EncodeE8M0(0.0f, true, E8M0Round::kUp), 0);
  EXPECT_EQ(EncodeE8M0(std::numeric_limits<float>::quiet_NaN(), true, E8M0Round::kUp), 0xFF);
  EXPECT_EQ(EncodeE8M0(std::numeric_limits<float>::infinity(), true, E8M0Round::kDown), 0xFF);
}

TEST(E8M0, SaturationStopsAtTheLargestPower) {
  const float big = std::nextafter(std::ldexp(1.0f, 127), INFINITY);  // just above 2^127
  EXPECT_EQ(EncodeE8M0(big, true, E8M0Round::kUp), 254);
  EXPECT_EQ(EncodeE8M0(big, false, E8M0Round::kUp), 0xFF);  // rounds past 2^127: NaN
  EXPECT_EQ(EncodeE8M0(big, false, E8M0Round::kDown), 254);
}

}  // namespace
}  // namespace nxrt::cpu::elementwise

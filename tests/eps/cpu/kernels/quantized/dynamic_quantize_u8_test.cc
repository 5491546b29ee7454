// The vector loops of dynamic uint8 quantization (eps/cpu/kernels/quantized/dynamic_quantize_u8.h)
// against their scalar definitions: identical results, NaN and infinities included.
#include "kernels/quantized/dynamic_quantize_u8.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

namespace nxrt::cpu::quantized {
namespace {

std::vector<float> Data(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-7.f, 11.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = d(rng);
  if (n > 5) x[5] = std::numeric_limits<float>::quiet_NaN();
  if (n > 40) x[40] = std::numeric_limits<float>::infinity();
  if (n > 41) x[41] = -std::numeric_limits<float>::infinity();
  if (n > 3) x[3] = 0.5f * 0.0703125f;  // a tie after division by the scale below
  return x;
}

TEST(DynamicQuantizeU8, RangeAndValuesMatchTheScalarLoops) {
  for (int64_t n : {0, 1, 7, 8, 31, 32, 33, 100, 1027}) {
    SCOPED_TRACE(n);
    const std::vector<float> x = Data(n, static_cast<uint32_t>(n + 1));
    float mn = 0.f, mx = 0.f, smn = 0.f, smx = 0.f;
    UpdateRange(x.data(), n, mn, mx);
    for (float v : x) {
      smn = v < smn ? v : smn;
      smx = v > smx ? v : smx;
    }
    EXPECT_EQ(mn, smn);
    EXPECT_EQ(mx, smx);
    const float scale = 0.0703125f, zp = 100.f;
    std::vector<uint8_t> y(x.size(), 7);
    QuantizeU8(x.data(), n, scale, zp, y.data());
    for (int64_t i = 0; i < n; ++i) {
      const float v = std::nearbyint(x[i] / scale) + zp;
      const int want = std::isnan(v) ? 0 : static_cast<int>(v < 0.f ? 0.f : v > 255.f ? 255.f : v);
      ASSERT_EQ(y[i], want) << "at " << i << " x=" << x[i];
    }
  }
}

}  // namespace
}  // namespace nxrt::cpu::quantized

// RequantizeRun (eps/cpu/kernels/linalg/quantized_common.h: 16 sums at a time with AVX2) equals
// RequantizeRunScalar, the definition, for sums across the whole int32 range, scales that
// saturate, negative, zero, NaN and infinite scales, a Relu floor, both 8-bit types and run
// lengths that leave a scalar tail.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/linalg/quantized_common.h"

namespace {

using nxrt::cpu::linalg::RequantizeRun;
using nxrt::cpu::linalg::RequantizeRunScalar;

template <class T>
void ExpectSameAsDefinition(const std::vector<int32_t>& acc, double scale, int32_t zp,
                            int32_t floor) {
  std::vector<T> got(acc.size()), want(acc.size());
  RequantizeRun(acc.data(), static_cast<int64_t>(acc.size()), scale, zp, floor, got.data());
  RequantizeRunScalar(acc.data(), static_cast<int64_t>(acc.size()), scale, zp, floor, want.data());
  ASSERT_EQ(got, want);
}

TEST(RequantizeRun, EqualsTheScalarDefinition) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> wide(std::numeric_limits<int32_t>::min(),
                                              std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int32_t> narrow(-5000, 5000);
  std::vector<int32_t> acc;
  for (int i = 0; i < 300; ++i) acc.push_back(i % 3 == 0 ? wide(rng) : narrow(rng));
  // Ties: 2.5, -2.5, 3.5 ... at scale 0.5 must round half to even.
  for (int32_t v = -41; v <= 41; v += 2) acc.push_back(v);
  acc.push_back(std::numeric_limits<int32_t>::min());
  acc.push_back(std::numeric_limits<int32_t>::max());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double scale : {0.5, 0.01, 0.0371, 3.0, 1e9, -0.25, 0.0, nan, inf, -inf}) {
    for (size_t n : {acc.size(), size_t{16}, size_t{15}, size_t{33}}) {
      const std::vector<int32_t> run(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(n));
      SCOPED_TRACE("scale " + std::to_string(scale) + ", " + std::to_string(n) + " sums");
      ExpectSameAsDefinition<uint8_t>(run, scale, 128, std::numeric_limits<int32_t>::min());
      ExpectSameAsDefinition<uint8_t>(run, scale, 17, 17);  // a fused Relu
      ExpectSameAsDefinition<int8_t>(run, scale, -3, std::numeric_limits<int32_t>::min());
      ExpectSameAsDefinition<int8_t>(run, scale, 5, 5);
    }
  }
}

}  // namespace

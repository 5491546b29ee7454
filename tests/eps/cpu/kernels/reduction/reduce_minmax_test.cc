// The vector body of ReduceMax / ReduceMin over floats (kernels/reduction/reduce_minmax_avx2.h)
// against a scalar fold: every length through the 32-wide loop, the 8-wide loop and the tail, a
// NaN at every position (the result must be NaN wherever it is), infinities, and the running
// accumulator it starts from.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/reduction/reduce_minmax_avx2.h"

namespace {

using nxrt::cpu::reduction::FoldMinMaxAvx2;

template <bool kMax>
float Reference(float acc, const std::vector<float>& x) {
  for (float v : x) {
    if (std::isnan(v) || std::isnan(acc)) return std::numeric_limits<float>::quiet_NaN();
    acc = kMax ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

template <bool kMax>
void ExpectMatches(float start, const std::vector<float>& x, const char* what) {
  float got = start;
  FoldMinMaxAvx2<kMax>(got, x.data(), static_cast<int64_t>(x.size()));
  const float want = Reference<kMax>(start, x);
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << " n " << x.size();
  } else {
    EXPECT_EQ(got, want) << what << " n " << x.size();
  }
}

TEST(ReduceMinMax, VectorFoldEqualsTheScalarFold) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (int64_t n = 0; n <= 100; ++n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    ExpectMatches<true>(-std::numeric_limits<float>::infinity(), x, "max");
    ExpectMatches<false>(std::numeric_limits<float>::infinity(), x, "min");
    ExpectMatches<true>(50.0f, x, "max from a running value");
    ExpectMatches<false>(-50.0f, x, "min from a running value");
    for (int64_t k = 0; k < n; ++k) {  // one NaN, anywhere
      std::vector<float> y = x;
      y[static_cast<size_t>(k)] = std::numeric_limits<float>::quiet_NaN();
      ExpectMatches<true>(-std::numeric_limits<float>::infinity(), y, "max with a NaN");
      ExpectMatches<false>(std::numeric_limits<float>::infinity(), y, "min with a NaN");
    }
  }
  std::vector<float> inf(40, 1.0f);
  inf[17] = std::numeric_limits<float>::infinity();
  inf[33] = -std::numeric_limits<float>::infinity();
  ExpectMatches<true>(-std::numeric_limits<float>::infinity(), inf, "max with infinities");
  ExpectMatches<false>(std::numeric_limits<float>::infinity(), inf, "min with infinities");
  float acc = std::numeric_limits<float>::quiet_NaN();  // a NaN carried in stays
  FoldMinMaxAvx2<true>(acc, inf.data(), 40);
  EXPECT_TRUE(std::isnan(acc));
}

}  // namespace

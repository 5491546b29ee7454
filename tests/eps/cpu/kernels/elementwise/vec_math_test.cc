// The CPU EP's vectorised exp / sigmoid / tanh / SiLU (kernels/elementwise/vec_math.h, which the
// activation kernels, the RNN gates and the convolution epilogue use) against the C library,
// over a dense range, lengths that are not multiples of 8, and special values.
#include "kernels/elementwise/vec_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace {

// Values from -30 to 30 in steps of 1/64 (every branch: tiny, the tanh switch at 0.5, saturation),
// plus specials, in a length that is not a multiple of 8.
std::vector<float> Inputs() {
  std::vector<float> v;
  for (int i = -1920; i <= 1920; ++i) v.push_back(static_cast<float>(i) / 64.0f);
  for (float f : {1e-30f, -1e-30f, 1e-6f, -1e-6f, 0.4999f, 0.5f, 0.5001f, -0.5f, 100.0f, -100.0f,
                  1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), -0.0f})
    v.push_back(f);
  v.push_back(std::numeric_limits<float>::quiet_NaN());  // the last one: in the scalar tail
  v.insert(v.begin() + 3, std::numeric_limits<float>::quiet_NaN());  // and one in a vector
  return v;
}

// |got - want| within `rel` of |want| (plus a tiny absolute floor for results near 0).
void ExpectClose(const std::vector<float>& x, const std::vector<float>& got, double (*want)(double),
                 double rel) {
  for (size_t i = 0; i < x.size(); ++i) {
    const double w = want(x[i]);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(got[i])) << "x = " << x[i];
      continue;
    }
    EXPECT_NEAR(got[i], w, rel * std::fabs(w) + 1e-30) << "x = " << x[i];
  }
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Tanh(double x) { return std::tanh(x); }
double Silu(double x) { return x * Sigmoid(x); }

// Sigmoid and swish have an AVX2 and an AVX-512 body (SigmoidArray / SwishArray pick one by
// CPUID): both are checked where the CPU runs them.
using namespace nxrt::cpu::elementwise;
using SigmoidBody = void (*)(const float*, float*, int64_t);
using SwishBody = void (*)(const float*, float*, int64_t, float);

std::vector<std::pair<const char*, SigmoidBody>> SigmoidBodies() {
  std::vector<std::pair<const char*, SigmoidBody>> b = {{"dispatch", SigmoidArray},
                                                        {"avx2", SigmoidArrayAvx2}};
  if (VecMathHasAvx512()) b.emplace_back("avx512", SigmoidArrayAvx512);
  return b;
}

std::vector<std::pair<const char*, SwishBody>> SwishBodies() {
  std::vector<std::pair<const char*, SwishBody>> b = {{"dispatch", SwishArray},
                                                      {"avx2", SwishArrayAvx2}};
  if (VecMathHasAvx512()) b.emplace_back("avx512", SwishArrayAvx512);
  return b;
}

TEST(VectorMath, SigmoidMatchesTheLibrary) {
  for (const auto& [name, body] : SigmoidBodies()) {
    SCOPED_TRACE(name);
    std::vector<float> x = Inputs(), y = x;
    body(x.data(), y.data(), static_cast<int64_t>(y.size()));
    ExpectClose(x, y, Sigmoid, 1e-6);
    // Every tail length (the AVX-512 body masks it), in place.
    for (int64_t n = 1; n <= 40; ++n) {
      std::vector<float> v(x.begin(), x.begin() + n), want(v.size());
      body(v.data(), want.data(), n);
      body(v.data(), v.data(), n);
      EXPECT_EQ(std::memcmp(v.data(), want.data(), sizeof(float) * v.size()), 0) << n;
    }
  }
}

TEST(VectorMath, TanhMatchesTheLibraryAlsoNearZero) {
  std::vector<float> x = Inputs(), y = x;
  nxrt::cpu::elementwise::TanhArray(x.data(), y.data(), static_cast<int64_t>(y.size()));
  ExpectClose(x, y, Tanh, 1e-6);  // relative, so tiny inputs must not lose digits
}

TEST(VectorMath, SwishMatchesTheLibrary) {
  for (const auto& [name, body] : SwishBodies()) {
    SCOPED_TRACE(name);
    std::vector<float> x = Inputs(), y = x;
    body(y.data(), y.data(), static_cast<int64_t>(y.size()), 1.0f);  // in place
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isinf(x[i])) continue;  // inf * sigmoid(inf): the library's own NaN / inf question
      const double w = Silu(x[i]);
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(y[i])) << "x = " << x[i];
        continue;
      }
      EXPECT_NEAR(y[i], w, 1e-6 * std::fabs(w) + 1e-30) << "x = " << x[i];
    }
    // alpha != 1: x * sigmoid(alpha x).
    std::vector<float> z(x.size());
    body(x.data(), z.data(), static_cast<int64_t>(x.size()), 1.702f);
    for (size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i])) continue;
      const float ax = 1.702f * x[i];  // as the body rounds it; exp(-ax) magnifies the rest
      const double w = x[i] * Sigmoid(ax);
      EXPECT_NEAR(z[i], w, 1e-6 * std::fabs(w) + 1e-30) << "x = " << x[i];
    }
  }
}

TEST(VectorMath, ExpMatchesTheLibrary) {
  std::vector<float> x = Inputs(), y(x.size());
  nxrt::cpu::elementwise::ExpArray(x.data(), y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double w = std::exp(static_cast<double>(x[i]));
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(y[i])) << "x = " << x[i];
    } else if (w > 3.4e38) {
      EXPECT_TRUE(std::isinf(y[i])) << "x = " << x[i];  // overflows like std::exp
    } else {
      EXPECT_NEAR(y[i], w, 1e-6 * w + 1e-37) << "x = " << x[i];
    }
  }
}

// 0.5 x erfc(-x / sqrt 2) in double: the definition, without 1 + erf's cancellation for x < 0.
double Gelu(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }

using GeluBody = void (*)(const float*, float*, int64_t);

std::vector<std::pair<const char*, GeluBody>> GeluBodies() {
  std::vector<std::pair<const char*, GeluBody>> b = {{"dispatch", GeluArray},
                                                     {"avx2", GeluArrayAvx2}};
  if (VecMathHasAvx512()) b.emplace_back("avx512", GeluArrayAvx512);
  return b;
}

// Relative accuracy everywhere, the negative tail included (down to where results turn
// subnormal), and the limits: Gelu(inf) = inf, Gelu(-inf) = 0, NaN stays NaN.
TEST(VectorMath, GeluMatchesTheDefinitionAlsoInTheNegativeTail) {
  std::vector<float> x = Inputs();
  for (int i = -15000; i <= 15000; ++i) x.push_back(static_cast<float>(i) * 1e-3f + 1e-4f);
  for (const auto& [name, body] : GeluBodies()) {
    SCOPED_TRACE(name);
    std::vector<float> y(x.size());
    body(x.data(), y.data(), static_cast<int64_t>(y.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i]));
        continue;
      }
      if (std::isinf(x[i])) {
        EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f) << "x = " << x[i];
        continue;
      }
      const double w = Gelu(x[i]);
      EXPECT_NEAR(y[i], w, 1e-6 * std::fabs(w) + 1e-38) << "x = " << x[i];
      if (std::fabs(w) > 1e-37) worst = std::max(worst, std::fabs(y[i] - w) / std::fabs(w));
    }
    EXPECT_LT(worst, 1e-6);
    std::printf("[ %s ] Gelu worst relative error %.2g\n", name, worst);
    // Every tail length, in place.
    for (int64_t n = 1; n <= 40; ++n) {
      std::vector<float> v(x.end() - n, x.end()), want(v.size());
      body(v.data(), want.data(), n);
      body(v.data(), v.data(), n);
      EXPECT_EQ(std::memcmp(v.data(), want.data(), sizeof(float) * v.size()), 0) << n;
    }
  }
}

// GeluRows on a block of a wider matrix (16 columns as a GEMM panel, and 13 with a tail) gives
// GeluArray's values, bit for bit, and leaves the columns outside the block alone.
TEST(VectorMath, GeluRowsMatchesGeluArrayOnABlockOfRows) {
  const std::vector<float> x = Inputs();
  for (int64_t cols : {16, 13}) {
    constexpr int64_t kLd = 40, kRows = 50;
    std::vector<float> matrix(kLd * kRows);
    for (size_t i = 0; i < matrix.size(); ++i) matrix[i] = x[(i * 7) % x.size()];
    std::vector<float> want = matrix;
    for (int64_t r = 0; r < kRows; ++r) GeluArray(&want[r * kLd + 5], &want[r * kLd + 5], cols);
    GeluRows(&matrix[5], kLd, kRows, cols);
    for (size_t i = 0; i < matrix.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(matrix[i])) << "cols " << cols << " element " << i;
      } else {
        EXPECT_EQ(std::memcmp(&matrix[i], &want[i], sizeof(float)), 0)
            << "cols " << cols << " element " << i << ": " << matrix[i] << " vs " << want[i];
      }
    }
  }
}

}  // namespace

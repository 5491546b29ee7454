// The CPU EP's vectorised exp / sigmoid / tanh / SiLU (kernels/elementwise/vec_math.h, which the
// activation kernels, the RNN gates and the convolution epilogue use) against the C library,
// over a dense range, lengths that are not multiples of 8, and special values.
#include "kernels/elementwise/vec_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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

TEST(VectorMath, SigmoidMatchesTheLibrary) {
  std::vector<float> x = Inputs(), y = x;
  nxrt::cpu::elementwise::SigmoidArray(x.data(), y.data(), static_cast<int64_t>(y.size()));
  ExpectClose(x, y, Sigmoid, 1e-6);
}

TEST(VectorMath, TanhMatchesTheLibraryAlsoNearZero) {
  std::vector<float> x = Inputs(), y = x;
  nxrt::cpu::elementwise::TanhArray(x.data(), y.data(), static_cast<int64_t>(y.size()));
  ExpectClose(x, y, Tanh, 1e-6);  // relative, so tiny inputs must not lose digits
}

TEST(VectorMath, SwishMatchesTheLibrary) {
  std::vector<float> x = Inputs(), y = x;
  nxrt::cpu::elementwise::SwishArray(y.data(), y.data(), static_cast<int64_t>(y.size()),
                                     1.0f);  // in place
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isinf(x[i])) continue;  // inf * sigmoid(inf): the library's own NaN / inf question
    const double w = Silu(x[i]);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(y[i])) << "x = " << x[i];
      continue;
    }
    EXPECT_NEAR(y[i], w, 1e-6 * std::fabs(w) + 1e-30) << "x = " << x[i];
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

}  // namespace

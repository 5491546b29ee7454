// The weight transposition of the pre-packings (eps/cpu/kernels/linalg/transpose_to_float.h):
// the 8x8 register blocks and the scalar edges must together place every element, for sizes
// below, at and around multiples of 8, from float and from float16 sources.
#include "kernels/linalg/transpose_to_float.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/half.h"

namespace nxrt::cpu::linalg {
namespace {

TEST(TransposeToFloat, EveryElementLandsAtItsTransposedPlace) {
  for (int64_t rows : {1, 7, 8, 9, 16, 23, 64}) {
    for (int64_t cols : {1, 5, 8, 15, 16, 17, 40}) {
      std::vector<float> src(static_cast<size_t>(rows * cols));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) + 0.5f;
      std::vector<float> dst(src.size(), -1.0f);
      TransposeToFloat(src.data(), rows, cols, dst.data());
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(dst[static_cast<size_t>(c * rows + r)], src[static_cast<size_t>(r * cols + c)])
              << rows << "x" << cols << " at row " << r << ", column " << c;
        }
      }
    }
  }
}

TEST(TransposeToFloat, ConvertsHalfSources) {
  const int64_t rows = 19, cols = 13;
  std::vector<Half> src;
  for (int64_t i = 0; i < rows * cols; ++i) src.push_back(Half(static_cast<float>(i % 97) * 0.25f));
  std::vector<float> dst(src.size());
  TransposeToFloat(src.data(), rows, cols, dst.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(dst[static_cast<size_t>(c * rows + r)],
                static_cast<float>(src[static_cast<size_t>(r * cols + c)]));
    }
  }
}

}  // namespace
}  // namespace nxrt::cpu::linalg

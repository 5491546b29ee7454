// Dead kernel taps (eps/cpu/kernels/linalg/conv_taps.h): a convolution over its live taps only
// (trimmed geometry and weights) gives exactly the result of the full one, for kernels, strides,
// dilations and paddings where some taps only ever read padding (atrous convolutions wider than
// the image, 3x3 convolutions over a 1x1 map) and where none do.
#include "kernels/linalg/conv_taps.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using nxrt::cpu::linalg::ConvGeometry;
using nxrt::cpu::linalg::FindLiveTaps;
using nxrt::cpu::linalg::LiveTaps;
using nxrt::cpu::linalg::TrimmedGeometry;
using nxrt::cpu::linalg::TrimmedWeights;

// A 2-D convolution (one image, group 1) over [c, h, w] with an [m, c, k, k] kernel.
ConvGeometry Geometry2d(int64_t c, int64_t m, int64_t h, int64_t w, int64_t k, int64_t stride,
                        int64_t dilation, int64_t pad) {
  ConvGeometry g;
  g.spatial = 2;
  g.batch = 1;
  g.in_channels = c;
  g.out_channels = m;
  g.in = {1, h, w};
  g.kernel = {1, k, k};
  g.stride = {1, stride, stride};
  g.dilation = {1, dilation, dilation};
  g.pad_begin = {0, pad, pad};
  g.pad_end = {0, pad, pad};
  const int64_t span = (k - 1) * dilation + 1;
  g.out = {1, (h + 2 * pad - span) / stride + 1, (w + 2 * pad - span) / stride + 1};
  return g;
}

// The convolution computed tap by tap, padding read as zero.
std::vector<double> Convolve(const ConvGeometry& g, const std::vector<float>& x,
                             const std::vector<float>& w) {
  const int64_t c = g.in_channels, m = g.out_channels;
  std::vector<double> y(static_cast<size_t>(m * g.out[1] * g.out[2]), 0.0);
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < g.out[1]; ++i)
      for (int64_t j = 0; j < g.out[2]; ++j) {
        double sum = 0.0;
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t a = 0; a < g.kernel[1]; ++a)
            for (int64_t b = 0; b < g.kernel[2]; ++b) {
              const int64_t r = i * g.stride[1] + a * g.dilation[1] - g.pad_begin[1];
              const int64_t s = j * g.stride[2] + b * g.dilation[2] - g.pad_begin[2];
              if (r < 0 || r >= g.in[1] || s < 0 || s >= g.in[2]) continue;
              sum += double(x[static_cast<size_t>((ch * g.in[1] + r) * g.in[2] + s)]) *
                     w[static_cast<size_t>(((o * c + ch) * g.kernel[1] + a) * g.kernel[2] + b)];
            }
        y[static_cast<size_t>((o * g.out[1] + i) * g.out[2] + j)] = sum;
      }
  return y;
}

TEST(ConvTaps, TrimmedConvolutionsEqualTheFullOnes) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  int trimmed = 0;
  struct Case {
    int64_t h, w, k, stride, dilation, pad;
  };
  const Case cases[] = {
      {20, 20, 3, 1, 24, 24},  // DeepLabV3's ASPP at rate 24: the centre tap only
      {20, 20, 3, 1, 36, 36},  // rate 36
      {20, 20, 3, 1, 12, 12},  // rate 12: every tap reads the image for some outputs
      {1, 1, 3, 1, 1, 1},      // a 3x3 over a 1x1 map: a 1x1 convolution
      {2, 3, 5, 1, 1, 2},      // a 5x5 over 2x3: the outer rows and columns are dead
      {7, 9, 5, 2, 4, 8},      // strided and dilated past the image
      {9, 9, 3, 1, 1, 1},      // an ordinary 3x3: nothing dead
      {6, 5, 3, 3, 2, 2},
  };
  for (const Case& cs : cases) {
    const ConvGeometry g = Geometry2d(3, 4, cs.h, cs.w, cs.k, cs.stride, cs.dilation, cs.pad);
    SCOPED_TRACE(std::to_string(cs.h) + "x" + std::to_string(cs.w) + " k" + std::to_string(cs.k) +
                 " s" + std::to_string(cs.stride) + " d" + std::to_string(cs.dilation) + " p" +
                 std::to_string(cs.pad));
    std::vector<float> x(static_cast<size_t>(3 * cs.h * cs.w)),
        w(static_cast<size_t>(4 * 3 * cs.k * cs.k));
    for (float& v : x) v = normal(rng);
    for (float& v : w) v = normal(rng);
    const LiveTaps live = FindLiveTaps(g);
    const ConvGeometry t = live.trims ? TrimmedGeometry(g, live) : g;
    EXPECT_EQ(t.out, g.out);
    const std::vector<float> tw = live.trims ? TrimmedWeights(g, live, w.data()) : w;
    EXPECT_EQ(tw.size(), static_cast<size_t>(4 * 3 * t.kernel[1] * t.kernel[2]));
    const std::vector<double> want = Convolve(g, x, w), got = Convolve(t, x, tw);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-9) << "at " << i;
    if (live.trims) {
      ++trimmed;
      EXPECT_LT(t.kernel[1] * t.kernel[2], g.kernel[1] * g.kernel[2]);
      EXPECT_GE(t.pad_begin[1], 0);
      EXPECT_GE(t.pad_end[1], 0);
    }
  }
  EXPECT_GE(trimmed, 5);
  // The atrous cases at rates 24 and 36 over 20x20 become 1x1 convolutions without padding.
  for (int64_t rate : {24, 36}) {
    const LiveTaps live = FindLiveTaps(Geometry2d(8, 8, 20, 20, 3, 1, rate, rate));
    EXPECT_TRUE(live.trims);
    EXPECT_EQ(live.count[1], 1);
    EXPECT_EQ(live.count[2], 1);
    EXPECT_EQ(live.pad_begin[1], 0);
    EXPECT_EQ(live.pad_end[2], 0);
  }
  EXPECT_FALSE(FindLiveTaps(Geometry2d(8, 8, 20, 20, 3, 1, 1, 1)).trims);
}

}  // namespace

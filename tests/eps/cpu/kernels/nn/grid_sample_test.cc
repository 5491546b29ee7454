// GridSample over 2-D planes (eps/cpu/kernels/nn/grid_sample.cc), run end to end through a
// one-node model at 1 and 2 threads, equals a direct scalar reference written from the
// operator's definition: bilinear and nearest sampling with zeros and border padding, both
// align_corners settings, grid points inside, on and far outside the border. The shapes cover
// the kernel's tiling: many one-channel images sampled at few points (RAFT's correlation
// lookups), one many-channel image at many points, and location counts that are not a multiple
// of the tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::AddFloatValue;
using nxrt::test::AddIntAttribute;
using nxrt::test::AddStringAttribute;
using nxrt::test::MakeNode;

struct GridCase {
  std::string name;
  int64_t n, c, h, w, out_h, out_w;
  std::string mode;     // "bilinear" or "nearest"
  std::string padding;  // "zeros" or "border"
  bool align_corners;
};

// Pixel coordinate of the normalised coordinate g along an axis of `size` pixels.
double Unnormalize(double g, int64_t size, bool align_corners) {
  return align_corners ? (g + 1) / 2 * static_cast<double>(size - 1)
                       : ((g + 1) * static_cast<double>(size) - 1) / 2;
}

// The value at integer pixel (iy, ix) of a plane: zero outside with zeros padding; with border
// padding the coordinate was clamped before, so an index past the last pixel has weight zero
// and reads the edge.
double At(const float* plane, const GridCase& c, int64_t iy, int64_t ix) {
  if (c.padding == "border") {
    iy = std::clamp<int64_t>(iy, 0, c.h - 1);
    ix = std::clamp<int64_t>(ix, 0, c.w - 1);
  }
  if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) return 0;
  return plane[iy * c.w + ix];
}

std::vector<float> Reference(const GridCase& c, const std::vector<float>& x,
                             const std::vector<float>& grid) {
  std::vector<float> y(static_cast<size_t>(c.n * c.c * c.out_h * c.out_w));
  for (int64_t n = 0; n < c.n; ++n) {
    for (int64_t oy = 0; oy < c.out_h; ++oy) {
      for (int64_t ox = 0; ox < c.out_w; ++ox) {
        const float* g = grid.data() + ((n * c.out_h + oy) * c.out_w + ox) * 2;
        double px = Unnormalize(g[0], c.w, c.align_corners);
        double py = Unnormalize(g[1], c.h, c.align_corners);
        if (c.padding == "border") {
          px = std::clamp(px, 0.0, static_cast<double>(c.w - 1));
          py = std::clamp(py, 0.0, static_cast<double>(c.h - 1));
        }
        for (int64_t ch = 0; ch < c.c; ++ch) {
          const float* plane = x.data() + (n * c.c + ch) * c.h * c.w;
          double v;
          if (c.mode == "nearest") {
            v = At(plane, c, static_cast<int64_t>(std::nearbyint(py)),
                   static_cast<int64_t>(std::nearbyint(px)));
          } else {
            const double fx = std::floor(px), fy = std::floor(py);
            const double tx = px - fx, ty = py - fy;
            const auto ix = static_cast<int64_t>(fx), iy = static_cast<int64_t>(fy);
            v = (1 - ty) * ((1 - tx) * At(plane, c, iy, ix) + tx * At(plane, c, iy, ix + 1)) +
                ty * ((1 - tx) * At(plane, c, iy + 1, ix) + tx * At(plane, c, iy + 1, ix + 1));
          }
          y[static_cast<size_t>(((n * c.c + ch) * c.out_h + oy) * c.out_w + ox)] =
              static_cast<float>(v);
        }
      }
    }
  }
  return y;
}

std::string GridModel(const GridCase& c) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(16);
  auto* g = m.mutable_graph();
  g->set_name("grid_sample");
  auto node = MakeNode("GridSample", {"x", "grid"}, {"y"}, "sample");
  AddStringAttribute(&node, "mode", c.mode);
  AddStringAttribute(&node, "padding_mode", c.padding);
  AddIntAttribute(&node, "align_corners", c.align_corners ? 1 : 0);
  *g->add_node() = node;
  AddFloatValue(g->add_input(), "x", {c.n, c.c, c.h, c.w});
  AddFloatValue(g->add_input(), "grid", {c.n, c.out_h, c.out_w, 2});
  AddFloatValue(g->add_output(), "y", {c.n, c.c, c.out_h, c.out_w});
  return m.SerializeAsString();
}

void ExpectMatchesReference(nxrt::Env& env, const GridCase& c) {
  SCOPED_TRACE(c.name + " " + c.mode + " " + c.padding + (c.align_corners ? " align_corners" : ""));
  std::mt19937 rng(static_cast<unsigned>(c.n * 31 + c.c * 7 + c.h + c.out_w));
  std::normal_distribution<float> normal;
  // Mostly inside [-1, 1], some on the border and some far outside (all taps outside).
  std::uniform_real_distribution<float> inside(-1.1f, 1.1f);
  const std::vector<int64_t> x_dims = {c.n, c.c, c.h, c.w};
  const std::vector<int64_t> grid_dims = {c.n, c.out_h, c.out_w, 2};
  nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, x_dims);
  nxrt::Value grid = nxrt::Value::Tensor(NX_TYPE_FLOAT, grid_dims);
  for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = normal(rng);
  float* gd = grid.data<float>();
  for (size_t i = 0; i < grid.size(); ++i) {
    gd[i] = inside(rng);
    if (i % 17 == 3) gd[i] = i % 2 ? 1.0f : -1.0f;
    if (i % 29 == 5) gd[i] = i % 2 ? 7.5f : -40.0f;
  }
  const std::vector<float> expected =
      Reference(c, std::vector<float>(x.data<float>(), x.data<float>() + x.size()),
                std::vector<float>(gd, gd + grid.size()));
  const std::string bytes = GridModel(c);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    nxrt::SessionOptions options;
    options.SetIntraOpThreads(threads);
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    auto y = session.Run({"x", "grid"}, {&x, &grid});
    ASSERT_EQ(y[0].shape(), (std::vector<int64_t>{c.n, c.c, c.out_h, c.out_w}));
    const float* got = y[0].data<float>();
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(got[i], expected[i], 1e-5f * std::max(1.0f, std::fabs(expected[i])))
          << "element " << i;
    }
  }
}

TEST(GridSample2D, MatchesTheDefinitionOnEveryTilingAndPadding) {
  // clang-format off
  const std::vector<GridCase> shapes = {
      // name, n, c, h, w, out_h, out_w
      {"raft lookups", 300, 1, 16, 16, 7, 7, "", "", false},
      {"one map, many channels", 1, 37, 9, 13, 21, 19, "", "", false},
      {"partial tiles", 3, 2, 5, 4, 9, 15, "", "", false},
      {"single pixel", 4, 3, 1, 1, 3, 5, "", "", false},
      {"single row", 2, 2, 1, 9, 1, 70, "", "", false},
  };
  // clang-format on
  nxrt::Env env;
  for (const auto& shape : shapes) {
    for (const char* mode : {"bilinear", "nearest"}) {
      for (const char* padding : {"zeros", "border"}) {
        for (bool align : {false, true}) {
          GridCase c = shape;
          c.mode = mode;
          c.padding = padding;
          c.align_corners = align;
          ExpectMatchesReference(env, c);
        }
      }
    }
  }
}

// An X with a zero-sized spatial axis has no pixel to sample: every output is 0 in every mode
// and padding (the bilinear path clamped its taps into the empty plane and read outside it; a
// fuzzer find, tests/fuzz/regressions/grid_sample_zero_width.onnx).
TEST(GridSample2D, AnEmptyPlaneSamplesZeros) {
  nxrt::Env env;
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      SCOPED_TRACE(std::string(mode) + " " + padding);
      const GridCase c{"empty", 1, 2, 4, 0, 3, 5, mode, padding, false};
      const std::string bytes = GridModel(c);
      nxrt::Session session(env, bytes.data(), bytes.size());
      nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{1, 2, 4, 0});
      nxrt::Value grid = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{1, 3, 5, 2});
      for (size_t i = 0; i < grid.size(); ++i) grid.data<float>()[i] = 0.25f;
      auto y = session.Run({"x", "grid"}, {&x, &grid});
      ASSERT_EQ(y[0].shape(), (std::vector<int64_t>{1, 2, 3, 5}));
      for (size_t i = 0; i < y[0].size(); ++i) EXPECT_EQ(y[0].data<float>()[i], 0.0f) << i;
    }
  }
}

}  // namespace

// Float MaxPool and AveragePool over 2-D planes (the single-pass bodies of
// eps/cpu/kernels/nn/pool_2d.h), run end to end through a one-node model, equal a direct scalar
// reference: exactly for MaxPool (NaN inputs skipped, -inf for a window without a valid tap),
// within 1e-5 relative for AveragePool. Every case runs with the AVX2 body and with the AVX-512
// one (skipped, visibly, on a CPU without it), at 1 and 2 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::AddFloatValue;
using nxrt::test::AddIntAttribute;
using nxrt::test::AddIntsAttribute;
using nxrt::test::AddStringAttribute;
using nxrt::test::MakeNode;

struct PoolCase {
  std::string name;
  bool max;  // MaxPool, else AveragePool
  int64_t batch, channels, h, w;
  int64_t kh, kw, sh, sw;
  int64_t pt, pl, pb, pr;  // explicit pads: top, left, bottom, right
  bool ceil_mode = false;
  bool count_include_pad = false;
  std::string auto_pad = "";  // SAME_UPPER / SAME_LOWER / VALID; pads unused then
};

struct Axis {
  int64_t in, k, s, pb, pe, out;
};

// Output size and resolved pads along one axis, as ONNX defines them (with ceil_mode the last
// window must start inside the input or its begin padding).
Axis ResolveAxis(const PoolCase& c, int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe) {
  Axis a{in, k, s, pb, pe, 0};
  if (c.auto_pad == "VALID") {
    a.pb = a.pe = 0;
    a.out = in >= k ? (in - k) / s + 1 : 0;
  } else if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
    a.out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (a.out - 1) * s + k - in);
    a.pb = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    a.pe = total - a.pb;
  } else {
    const int64_t room = in + pb + pe - k;
    if (c.ceil_mode) {
      a.out = (room + s - 1) / s + 1;
      if ((a.out - 1) * s >= in + pb) --a.out;
    } else {
      a.out = room / s + 1;
    }
  }
  return a;
}

// Taps of output o along an axis that count for the average with count_include_pad: those
// inside the explicitly padded input.
int64_t PaddedCount(const Axis& a, int64_t o) {
  const int64_t start = o * a.s - a.pb;
  return std::clamp<int64_t>(a.in + a.pe - start, 0, a.k);
}

std::vector<float> Reference(const PoolCase& c, const Axis& ah, const Axis& aw,
                             const std::vector<float>& x) {
  std::vector<float> y;
  for (int64_t p = 0; p < c.batch * c.channels; ++p) {
    const float* xp = x.data() + p * c.h * c.w;
    for (int64_t oh = 0; oh < ah.out; ++oh) {
      for (int64_t ow = 0; ow < aw.out; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        double sum = 0;
        int64_t valid = 0;
        for (int64_t i = 0; i < c.kh; ++i) {
          const int64_t ih = oh * c.sh - ah.pb + i;
          if (ih < 0 || ih >= c.h) continue;
          for (int64_t j = 0; j < c.kw; ++j) {
            const int64_t iw = ow * c.sw - aw.pb + j;
            if (iw < 0 || iw >= c.w) continue;
            const float v = xp[ih * c.w + iw];
            if (v > best) best = v;  // NaN never wins
            sum += v;
            ++valid;
          }
        }
        if (c.max) {
          y.push_back(best);
        } else {
          const int64_t count =
              c.count_include_pad ? PaddedCount(ah, oh) * PaddedCount(aw, ow) : valid;
          y.push_back(count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f);
        }
      }
    }
  }
  return y;
}

std::string PoolModel(const PoolCase& c, const std::vector<int64_t>& y_dims) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("pool");
  auto node = MakeNode(c.max ? "MaxPool" : "AveragePool", {"x"}, {"y"}, "pool");
  AddIntsAttribute(&node, "kernel_shape", {c.kh, c.kw});
  AddIntsAttribute(&node, "strides", {c.sh, c.sw});
  if (c.auto_pad.empty()) {
    AddIntsAttribute(&node, "pads", {c.pt, c.pl, c.pb, c.pr});
  } else {
    AddStringAttribute(&node, "auto_pad", c.auto_pad);
  }
  AddIntAttribute(&node, "ceil_mode", c.ceil_mode ? 1 : 0);
  if (!c.max) AddIntAttribute(&node, "count_include_pad", c.count_include_pad ? 1 : 0);
  *g->add_node() = node;
  AddFloatValue(g->add_input(), "x", {c.batch, c.channels, c.h, c.w});
  AddFloatValue(g->add_output(), "y", y_dims);
  return m.SerializeAsString();
}

// Runs `c` with the CPU EP option isa=`isa` at 1 and 2 threads and compares with the reference.
void ExpectMatchesReference(nxrt::Env& env, const PoolCase& c, const std::string& isa) {
  SCOPED_TRACE(c.name + " isa=" + isa);
  const Axis ah = ResolveAxis(c, c.h, c.kh, c.sh, c.pt, c.pb);
  const Axis aw = ResolveAxis(c, c.w, c.kw, c.sw, c.pl, c.pr);
  const std::vector<int64_t> y_dims = {c.batch, c.channels, ah.out, aw.out};

  std::mt19937 rng(static_cast<unsigned>(c.h * 131 + c.w * 7 + c.kh + c.kw));
  std::normal_distribution<float> normal;
  const std::vector<int64_t> x_dims = {c.batch, c.channels, c.h, c.w};
  nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, x_dims);
  float* xd = x.data<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    xd[i] = normal(rng);
    if (c.max) {
      // NaN and -inf scattered, signed zeros, and in the second plane a NaN block wider than
      // the small windows (windows of NaN only give -inf).
      if (i % 7 == 3) xd[i] = std::numeric_limits<float>::quiet_NaN();
      if (i % 11 == 5) xd[i] = -std::numeric_limits<float>::infinity();
      if (i % 13 == 8) xd[i] = i % 2 ? 0.0f : -0.0f;
      const int64_t plane = static_cast<int64_t>(i) / (c.h * c.w), at = i % (c.h * c.w);
      if (plane == 1 && at / c.w < 6 && at % c.w < 6) {
        xd[i] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
  const std::vector<float> xs(xd, xd + x.size());
  const std::vector<float> expected = Reference(c, ah, aw, xs);

  const std::string bytes = PoolModel(c, y_dims);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    nxrt::SessionOptions options;
    options.SetIntraOpThreads(threads);
    options.SetConfig("ep.cpu.isa", isa);
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    auto y = session.Run({"x"}, {&x});
    ASSERT_EQ(y[0].shape(), y_dims);
    const float* got = y[0].data<float>();
    for (size_t i = 0; i < expected.size(); ++i) {
      if (c.max) {
        // Exact; NaN never comes out (no tap -> -inf). +0 and -0 compare equal.
        ASSERT_FALSE(std::isnan(got[i])) << "element " << i;
        ASSERT_EQ(got[i], expected[i]) << "element " << i;
      } else {
        ASSERT_NEAR(got[i], expected[i], 1e-5f * std::max(1.0f, std::fabs(expected[i])))
            << "element " << i;
      }
    }
  }
}

std::vector<PoolCase> Cases() {
  // clang-format off
  std::vector<PoolCase> shapes = {
      // name, max, batch, channels, h, w, kh, kw, sh, sw, pt, pl, pb, pr, ceil, include pad
      // SqueezeNet's MaxPools: 3x3 stride 2, ceil_mode, no pads
      {"3x3 s2 ceil 111", true, 1, 3, 111, 111, 3, 3, 2, 2, 0, 0, 0, 0, true},
      {"3x3 s2 ceil 27", true, 2, 5, 27, 27, 3, 3, 2, 2, 0, 0, 0, 0, true},
      // widths around the vector sizes, single rows and columns
      {"3x3 s1 pad 1 w1", true, 2, 3, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1},
      {"3x3 s1 pad 1 h1 w7", true, 2, 3, 1, 7, 3, 3, 1, 1, 1, 1, 1, 1},
      {"3x3 s1 pad 1 13", true, 2, 3, 9, 13, 3, 3, 1, 1, 1, 1, 1, 1},
      {"3x3 s1 17", true, 2, 3, 8, 17, 3, 3, 1, 1, 0, 0, 0, 0},
      {"3x3 s2 pad asym 33", true, 2, 4, 10, 33, 3, 3, 2, 2, 1, 2, 0, 1},
      {"3x3 s2 pad 1 ceil 111", true, 1, 2, 13, 111, 3, 3, 2, 2, 1, 1, 1, 1, true},
      {"2x2 s2 17", true, 2, 3, 7, 17, 2, 2, 2, 2, 0, 0, 0, 0},
      {"2x2 s2 ceil 33", true, 2, 3, 9, 33, 2, 2, 2, 2, 0, 0, 0, 0, true},
      {"2x2 s1 pad br 13", true, 1, 4, 6, 13, 2, 2, 1, 1, 0, 0, 1, 1},
      {"1x1 s1 33", true, 2, 3, 3, 33, 1, 1, 1, 1, 0, 0, 0, 0},
      {"1x1 s2 17", true, 2, 3, 5, 17, 1, 1, 2, 2, 0, 0, 0, 0},
      {"5x5 s1 pad 2 33", true, 2, 3, 11, 33, 5, 5, 1, 1, 2, 2, 2, 2},
      {"5x5 s2 pad asym 37", true, 1, 3, 12, 37, 5, 5, 2, 2, 2, 1, 0, 2, true},
      {"5x5 s3 pad 2 41", true, 2, 2, 14, 41, 5, 5, 3, 3, 2, 2, 2, 2},
      {"3x1 s1 pad 13", true, 2, 3, 9, 13, 3, 1, 1, 1, 1, 0, 1, 0},
      {"1x3 s2 111", true, 1, 2, 4, 111, 1, 3, 1, 2, 0, 1, 0, 1},
      {"3x3 s3 ceil 17", true, 2, 3, 10, 17, 3, 3, 3, 3, 0, 0, 0, 0, true},
      {"4x4 s2 pad 1 ceil 29", true, 2, 3, 11, 29, 4, 4, 2, 2, 1, 1, 1, 1, true},
      {"4x4 s4 pad 1 66", true, 1, 2, 9, 66, 4, 4, 4, 4, 1, 1, 1, 1, true},
      {"7x7 s2 pad 3 49", true, 1, 2, 15, 49, 7, 7, 2, 2, 3, 3, 3, 3},
      // pads as wide as the kernel: windows without a valid tap
      {"2x2 s1 pad 2 7", true, 1, 2, 3, 7, 2, 2, 1, 1, 2, 2, 2, 2},
      // wide and narrow windows next to the limits of the vector bodies (16) and past them
      {"16x16 s1 pad 8 40", true, 1, 2, 20, 40, 16, 16, 1, 1, 8, 8, 7, 7},
      {"1x17 s1 pad 8 40", true, 1, 2, 3, 40, 1, 17, 1, 1, 0, 8, 0, 8},
      {"3x3 s5 21", true, 1, 2, 11, 21, 3, 3, 5, 5, 0, 0, 0, 0},
      // enough planes to split over 2 threads
      {"3x3 s1 pad 1 many planes", true, 2, 64, 33, 33, 3, 3, 1, 1, 1, 1, 1, 1},
      {"3x3 s2 many planes", true, 2, 64, 31, 55, 3, 3, 2, 2, 0, 0, 0, 0, true},
      // auto_pad
      {"3x3 s2 SAME_UPPER", true, 1, 3, 10, 17, 3, 3, 2, 2, 0, 0, 0, 0, false, false, "SAME_UPPER"},
      {"2x2 s1 SAME_LOWER", true, 1, 3, 7, 13, 2, 2, 1, 1, 0, 0, 0, 0, false, false, "SAME_LOWER"},
  };
  // clang-format on
  // Every shape for AveragePool too, without and with count_include_pad.
  std::vector<PoolCase> cases;
  for (const PoolCase& s : shapes) {
    cases.push_back(s);
    for (bool include : {false, true}) {
      PoolCase a = s;
      a.max = false;
      a.count_include_pad = include;
      a.name = "avg " + s.name + (include ? " include pad" : "");
      cases.push_back(a);
    }
  }
  return cases;
}

TEST(Pool2d, Avx2MatchesTheReference) {
  nxrt::Env env(NX_LOG_ERROR);
  for (const PoolCase& c : Cases()) ExpectMatchesReference(env, c, "avx2");
}

TEST(Pool2d, Avx512MatchesTheReference) {
  if (!__builtin_cpu_supports("avx512f")) {
    GTEST_SKIP() << "this CPU has no AVX-512: only the AVX2 body was tested";
  }
  nxrt::Env env(NX_LOG_ERROR);
  for (const PoolCase& c : Cases()) ExpectMatchesReference(env, c, "avx512");
}

}  // namespace

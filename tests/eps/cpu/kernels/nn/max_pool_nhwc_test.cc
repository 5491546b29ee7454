// The CPU EP's com.nxrt MaxPool with channels_last=1 (eps/cpu/kernels/nn/max_pool_nhwc.cc),
// run through a one-node model at 1 and 2 threads, equals a direct reference over NHWC uint8
// and int8 tensors: windows with padding, strides, dilations, ceil_mode and SAME padding,
// channel counts around the vector widths, windows that hold no input tap. Bad inputs get
// clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::AddIntAttribute;
using nxrt::test::AddIntsAttribute;
using nxrt::test::AddStringAttribute;
using nxrt::test::AddTypedValue;
using nxrt::test::MakeNode;

struct PoolCase {
  std::string name;
  int64_t n, h, w, c;
  int64_t kh, kw, sh, sw, dh, dw;
  int64_t pt, pl, pb, pr;
  bool ceil_mode = false;
  std::string auto_pad = "";
};

// Output size along one axis (explicit pads or SAME_UPPER), and the begin pad used.
std::pair<int64_t, int64_t> OutSize(const PoolCase& c, int64_t in, int64_t k, int64_t s, int64_t d,
                                    int64_t pb, int64_t pe) {
  const int64_t span = (k - 1) * d + 1;
  if (c.auto_pad == "SAME_UPPER") {
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
    return {out, total / 2};
  }
  const int64_t room = in + pb + pe - span;
  if (!c.ceil_mode) return {room / s + 1, pb};
  int64_t out = (room + s - 1) / s + 1;
  if ((out - 1) * s >= in + pb) --out;
  return {out, pb};
}

template <class T>
std::vector<T> Reference(const PoolCase& c, const std::vector<T>& x, int64_t oh, int64_t ow,
                         int64_t ph, int64_t pw) {
  std::vector<T> y;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t ch = 0; ch < c.c; ++ch) {
          T best = std::numeric_limits<T>::lowest();
          for (int64_t a = 0; a < c.kh; ++a)
            for (int64_t b = 0; b < c.kw; ++b) {
              const int64_t r = i * c.sh - ph + a * c.dh, q = j * c.sw - pw + b * c.dw;
              if (r < 0 || r >= c.h || q < 0 || q >= c.w) continue;
              best = std::max(best, x[static_cast<size_t>(((n * c.h + r) * c.w + q) * c.c + ch)]);
            }
          y.push_back(best);
        }
  return y;
}

std::string PoolModel(const PoolCase& c, int type, const std::vector<int64_t>& y_dims,
                      int64_t channels_last = 1) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* nxrt_opset = m.add_opset_import();
  nxrt_opset->set_domain("com.nxrt");
  nxrt_opset->set_version(1);
  auto* g = m.mutable_graph();
  g->set_name("pool_nhwc");
  auto node = MakeNode("MaxPool", {"x"}, {"y"}, "pool");
  node.set_domain("com.nxrt");
  AddIntsAttribute(&node, "kernel_shape", {c.kh, c.kw});
  AddIntsAttribute(&node, "strides", {c.sh, c.sw});
  AddIntsAttribute(&node, "dilations", {c.dh, c.dw});
  if (c.auto_pad.empty()) {
    AddIntsAttribute(&node, "pads", {c.pt, c.pl, c.pb, c.pr});
  } else {
    AddStringAttribute(&node, "auto_pad", c.auto_pad);
  }
  AddIntAttribute(&node, "ceil_mode", c.ceil_mode ? 1 : 0);
  AddIntAttribute(&node, "channels_last", channels_last);
  *g->add_node() = node;
  AddTypedValue(g->add_input(), "x", type, {c.n, c.h, c.w, c.c});
  AddTypedValue(g->add_output(), "y", type, y_dims);
  return m.SerializeAsString();
}

template <class T>
void ExpectMatchesReference(nxrt::Env& env, const PoolCase& c, NxElementType nx_type,
                            int onnx_type) {
  SCOPED_TRACE(c.name + (std::is_signed_v<T> ? " int8" : " uint8"));
  const auto [oh, ph] = OutSize(c, c.h, c.kh, c.sh, c.dh, c.pt, c.pb);
  const auto [ow, pw] = OutSize(c, c.w, c.kw, c.sw, c.dw, c.pl, c.pr);
  const std::vector<int64_t> x_dims = {c.n, c.h, c.w, c.c}, y_dims = {c.n, oh, ow, c.c};
  nxrt::Value x = nxrt::Value::Tensor(nx_type, x_dims);
  std::mt19937 rng(static_cast<unsigned>(c.h * 31 + c.w * 7 + c.c));
  std::uniform_int_distribution<int> any(std::numeric_limits<T>::lowest(),
                                         std::numeric_limits<T>::max());
  for (size_t i = 0; i < x.size(); ++i) x.data<T>()[i] = static_cast<T>(any(rng));
  const std::vector<T> xs(x.data<T>(), x.data<T>() + x.size());
  const std::vector<T> expected = Reference<T>(c, xs, oh, ow, ph, pw);
  const std::string bytes = PoolModel(c, onnx_type, y_dims);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    nxrt::SessionOptions options;
    options.SetIntraOpThreads(threads);
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    auto y = session.Run({"x"}, {&x});
    ASSERT_EQ(y[0].shape(), y_dims);
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_EQ(static_cast<int>(y[0].data<T>()[i]), static_cast<int>(expected[i])) << i;
  }
}

TEST(MaxPoolNhwc, MatchesTheDefinition) {
  // clang-format off
  const std::vector<PoolCase> cases = {
      // name, n, h, w, c, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr
      {"ResNet stem 3x3 s2 pad 1", 1, 28, 28, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
      {"2x2 s2, 3 channels", 2, 9, 11, 3, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0},
      {"odd channels, asymmetric pads", 1, 7, 13, 37, 3, 2, 1, 2, 1, 1, 2, 0, 1, 1},
      {"dilated", 1, 12, 10, 33, 3, 3, 1, 1, 2, 3, 2, 3, 2, 3},
      {"ceil_mode", 2, 10, 9, 17, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, true},
      {"SAME_UPPER", 1, 8, 7, 65, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, false, "SAME_UPPER"},
      {"windows in the padding only", 1, 2, 2, 5, 2, 2, 3, 3, 1, 1, 3, 3, 3, 3},
      {"1x1 channel", 3, 5, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  };
  // clang-format on
  nxrt::Env env(NX_LOG_ERROR);
  for (const PoolCase& c : cases) {
    ExpectMatchesReference<uint8_t>(env, c, NX_TYPE_UINT8, onnx::TensorProto::UINT8);
    ExpectMatchesReference<int8_t>(env, c, NX_TYPE_INT8, onnx::TensorProto::INT8);
  }
}

TEST(MaxPoolNhwc, RejectsWhatItDoesNotImplement) {
  nxrt::Env env(NX_LOG_ERROR);
  const PoolCase c{"2x2", 1, 4, 4, 3, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0};
  const std::vector<int64_t> y_dims = {1, 2, 2, 3};
  {  // channels_last=0 (an NCHW com.nxrt MaxPool) has no kernel: the session says so.
    const std::string bytes = PoolModel(c, onnx::TensorProto::UINT8, y_dims, 0);
    try {
      nxrt::Session session(env, bytes.data(), bytes.size(), nullptr);
      FAIL() << "channels_last=0 was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("channels_last=1"), std::string::npos) << e.what();
    }
  }
  {  // float input: a clear error at run time, no crash.
    const std::string bytes = PoolModel(c, onnx::TensorProto::FLOAT, y_dims);
    nxrt::Session session(env, bytes.data(), bytes.size(), nullptr);
    const std::vector<int64_t> dims = {1, 4, 4, 3};
    nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
    try {
      session.Run({"x"}, {&x});
      FAIL() << "a float input was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("is not uint8 or int8"), std::string::npos) << e.what();
    }
  }
}

}  // namespace

// ConvTranspose (eps/cpu/kernels/linalg/conv_transpose.cc), run end to end through one-node
// models at 1 to 3 threads, equals the operator's definition computed directly in double.
// The cases cover the up-convolutions whose taps tile the output (kernel = stride: written once
// per element, in cache-sized chunks of input rows when the weights are small, interleaving a
// stride-2 row's two taps), with and without bias, groups, a batch, widths that are not a
// multiple of four, weights given at run time (not packed), and overlapping taps with padding
// (the scatter-add path).
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
using nxrt::test::AddIntsAttribute;
using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;

struct Case {
  std::string name;
  int64_t n, c, m, h, w, k, stride, pad, group;
  bool bias, constant_weights;
};

int64_t OutSize(const Case& c, int64_t in) { return (in - 1) * c.stride + c.k - 2 * c.pad; }

// y[n, o, oy, ox] = b[o] + sum over input channels i of o's group and taps landing there.
std::vector<double> Reference(const Case& c, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>& b) {
  const int64_t oh = OutSize(c, c.h), ow = OutSize(c, c.w);
  const int64_t icg = c.c / c.group, ocg = c.m / c.group;
  std::vector<double> y(static_cast<size_t>(c.n * c.m * oh * ow));
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t o = 0; o < c.m; ++o)
      for (int64_t p = 0; p < oh * ow; ++p)
        y[static_cast<size_t>((n * c.m + o) * oh * ow + p)] =
            c.bias ? b[static_cast<size_t>(o)] : 0;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t i = 0; i < c.c; ++i) {
      const int64_t grp = i / icg;
      for (int64_t oc = 0; oc < ocg; ++oc) {
        const int64_t o = grp * ocg + oc;
        for (int64_t iy = 0; iy < c.h; ++iy)
          for (int64_t ix = 0; ix < c.w; ++ix)
            for (int64_t ky = 0; ky < c.k; ++ky)
              for (int64_t kx = 0; kx < c.k; ++kx) {
                const int64_t oy = iy * c.stride + ky - c.pad, ox = ix * c.stride + kx - c.pad;
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                const double xv = x[static_cast<size_t>(((n * c.c + i) * c.h + iy) * c.w + ix)];
                const double wv = w[static_cast<size_t>(((i * ocg + oc) * c.k + ky) * c.k + kx)];
                y[static_cast<size_t>(((n * c.m + o) * oh + oy) * ow + ox)] += xv * wv;
              }
      }
    }
  return y;
}

std::string Model(const Case& c, const std::vector<float>& w, const std::vector<float>& b) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("conv_transpose");
  std::vector<std::string> inputs = {"x", "w"};
  if (c.bias) inputs.push_back("b");
  auto node = MakeNode("ConvTranspose", inputs, {"y"}, "up");
  AddIntsAttribute(&node, "kernel_shape", {c.k, c.k});
  AddIntsAttribute(&node, "strides", {c.stride, c.stride});
  AddIntsAttribute(&node, "pads", {c.pad, c.pad, c.pad, c.pad});
  AddIntAttribute(&node, "group", c.group);
  *g->add_node() = node;
  AddFloatValue(g->add_input(), "x", {c.n, c.c, c.h, c.w});
  const std::vector<int64_t> w_dims = {c.c, c.m / c.group, c.k, c.k};
  if (c.constant_weights)
    *g->add_initializer() = MakeFloatTensor("w", w_dims, w);
  else
    AddFloatValue(g->add_input(), "w", w_dims);
  if (c.bias) *g->add_initializer() = MakeFloatTensor("b", {c.m}, b);
  AddFloatValue(g->add_output(), "y", {c.n, c.m, OutSize(c, c.h), OutSize(c, c.w)});
  return m.SerializeAsString();
}

TEST(ConvTranspose, UpConvolutionsEqualTheDefinition) {
  // clang-format off
  const std::vector<Case> cases = {
      // name, n, c, m, h, w, k, stride, pad, group, bias, constant weights
      {"DBNet head 2x2 s2", 1, 16, 16, 23, 21, 2, 2, 0, 1, false, true},
      {"with bias, to one channel", 1, 16, 1, 19, 30, 2, 2, 0, 1, true, true},
      {"large weights: whole image", 1, 96, 96, 6, 5, 2, 2, 0, 1, true, true},
      {"3x3 s3, groups, batch", 2, 8, 12, 7, 9, 3, 3, 0, 4, true, true},
      {"weights at run time", 1, 6, 10, 9, 11, 2, 2, 0, 1, true, false},
      {"overlapping taps, padded", 2, 5, 7, 8, 6, 4, 2, 1, 1, true, true},
  };
  // clang-format on
  nxrt::Env env(NX_LOG_ERROR);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<float> x(static_cast<size_t>(c.n * c.c * c.h * c.w));
    std::vector<float> w(static_cast<size_t>(c.c * (c.m / c.group) * c.k * c.k));
    std::vector<float> b(static_cast<size_t>(c.m));
    for (std::vector<float>* v : {&x, &w, &b})
      for (float& e : *v) e = normal(rng);
    const std::vector<double> want = Reference(c, x, w, b);
    const std::string bytes = Model(c, w, b);
    const std::vector<int64_t> x_dims = {c.n, c.c, c.h, c.w};
    const std::vector<int64_t> w_dims = {c.c, c.m / c.group, c.k, c.k};
    nxrt::Value xv = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, x_dims, x.data(), x.size() * 4);
    nxrt::Value wv = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, w_dims, w.data(), w.size() * 4);
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      nxrt::SessionOptions options;
      options.SetIntraOpThreads(threads);
      nxrt::Session session(env, bytes.data(), bytes.size(), &options);
      auto y = c.constant_weights ? session.Run({"x"}, {&xv}) : session.Run({"x", "w"}, {&xv, &wv});
      ASSERT_EQ(y[0].size(), want.size());
      const float* got = y[0].data<float>();
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.0, std::fabs(want[i]))) << "element " << i;
    }
  }
}

}  // namespace

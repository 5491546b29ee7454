// Convolutions split over threads (oneDNN primitives in output-channel slices on the session's
// pool, GEMM and depthwise paths split on it too) equal a direct reference convolution at every
// thread count, on shapes whose channel counts are not multiples of the slice width.
#include <gtest/gtest.h>

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

struct ConvCase {
  std::string name;
  int64_t batch, in_channels, out_channels, group;
  std::vector<int64_t> in, kernel, stride, dilation, pads;  // pads: begins then ends
  bool bias;
  bool constant_weights;  // an initializer (packed once) or a graph input (every run)
  bool residual_relu;     // Conv -> Add(z) -> Relu, fused into one FusedConv
};

std::vector<int64_t> OutputSpatial(const ConvCase& c) {
  std::vector<int64_t> out;
  const size_t r = c.in.size();
  for (size_t d = 0; d < r; ++d) {
    const int64_t span = c.dilation[d] * (c.kernel[d] - 1) + 1;
    out.push_back((c.in[d] + c.pads[d] + c.pads[r + d] - span) / c.stride[d] + 1);
  }
  return out;
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

std::vector<int64_t> Concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct ConvData {
  std::vector<float> w, b;
};

std::string ConvModel(const ConvCase& c, const ConvData& data) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("conv");
  std::vector<std::string> inputs = {"x", "w"};
  if (c.bias) inputs.push_back("b");
  auto conv = MakeNode("Conv", inputs, {c.residual_relu ? "c" : "y"}, "conv");
  AddIntsAttribute(&conv, "kernel_shape", c.kernel);
  AddIntsAttribute(&conv, "strides", c.stride);
  AddIntsAttribute(&conv, "dilations", c.dilation);
  AddIntsAttribute(&conv, "pads", c.pads);
  AddIntAttribute(&conv, "group", c.group);
  *g->add_node() = conv;
  const std::vector<int64_t> w_dims = Concat({c.out_channels, c.in_channels / c.group}, c.kernel);
  const std::vector<int64_t> y_dims = Concat({c.batch, c.out_channels}, OutputSpatial(c));
  AddFloatValue(g->add_input(), "x", Concat({c.batch, c.in_channels}, c.in));
  if (c.constant_weights)
    *g->add_initializer() = MakeFloatTensor("w", w_dims, data.w);
  else
    AddFloatValue(g->add_input(), "w", w_dims);
  if (c.bias) *g->add_initializer() = MakeFloatTensor("b", {c.out_channels}, data.b);
  if (c.residual_relu) {
    AddFloatValue(g->add_input(), "z", y_dims);
    *g->add_node() = MakeNode("Add", {"c", "z"}, {"s"}, "residual");
    *g->add_node() = MakeNode("Relu", {"s"}, {"y"}, "relu");
  }
  AddFloatValue(g->add_output(), "y", y_dims);
  return m.SerializeAsString();
}

// Direct convolution in double, any rank: the reference the kernels must match.
std::vector<float> ReferenceConv(const ConvCase& c, const std::vector<float>& x,
                                 const ConvData& data, const std::vector<float>& z) {
  const std::vector<int64_t> out = OutputSpatial(c);
  const size_t r = c.in.size();
  const int64_t in_size = Product(c.in), out_size = Product(out), k_size = Product(c.kernel);
  const int64_t icg = c.in_channels / c.group, ocg = c.out_channels / c.group;
  std::vector<float> y(static_cast<size_t>(c.batch * c.out_channels * out_size));
  std::vector<int64_t> o(r), k(r);
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t oc = 0; oc < c.out_channels; ++oc) {
      const int64_t grp = oc / ocg;
      for (int64_t op = 0; op < out_size; ++op) {
        for (int64_t rest = op, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
          o[d] = rest % out[d];
          rest /= out[d];
        }
        double acc = c.bias ? data.b[oc] : 0.0;
        for (int64_t ic = 0; ic < icg; ++ic) {
          for (int64_t kp = 0; kp < k_size; ++kp) {
            for (int64_t rest = kp, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
              k[d] = rest % c.kernel[d];
              rest /= c.kernel[d];
            }
            int64_t offset = 0;
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              const int64_t i = o[d] * c.stride[d] - c.pads[d] + k[d] * c.dilation[d];
              inside = inside && i >= 0 && i < c.in[d];
              offset = offset * c.in[d] + i;
            }
            if (!inside) continue;
            const float xv = x[(n * c.in_channels + grp * icg + ic) * in_size + offset];
            const float wv = data.w[(oc * icg + ic) * k_size + kp];
            acc += static_cast<double>(xv) * wv;
          }
        }
        const size_t at = static_cast<size_t>((n * c.out_channels + oc) * out_size + op);
        if (c.residual_relu) acc = std::max(0.0, acc + z[at]);
        y[at] = static_cast<float>(acc);
      }
    }
  }
  return y;
}

nxrt::Value RandomTensor(const std::vector<int64_t>& dims, std::mt19937& rng) {
  nxrt::Value v = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < v.size(); ++i) v.data<float>()[i] = normal(rng);
  return v;
}

TEST(ConvThreads, EveryThreadCountMatchesTheReference) {
  // clang-format off
  const std::vector<ConvCase> cases = {
      // name, batch, in/out channels, group, input, kernel, stride, dilation, pads, bias,
      // constant weights, residual + Relu
      // 40 output channels: slices of 16, 16, 8 at 3 threads; batch 2
      {"3x3 pad 1, 40 channels", 2, 5, 40, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      // stride, dilation, asymmetric padding, no bias, weights given at run time
      {"3x3 stride 2 dilation 2", 1, 7, 64, 1, {17, 15}, {3, 3}, {2, 2}, {2, 2}, {2, 1, 0, 3}, false, false, false},
      // the residual sum and activation fused into the primitive of every slice
      {"3x3 + Add + Relu", 1, 16, 48, 1, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, true},
      {"1-D kernel 5", 2, 24, 72, 1, {50}, {5}, {1}, {1}, {2, 2}, true, true, false},
      // paths that split without slices: pointwise GEMM, grouped, depthwise
      {"1x1 GEMM", 1, 24, 40, 1, {20, 20}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false},
      {"grouped", 1, 32, 48, 4, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      {"depthwise", 1, 40, 40, 40, {30, 30}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      // depthwise 5x5 at stride 1 and 2 on odd planes (vector taps, the stride-2 even/odd
      // split), dilated with a channel multiplier, and 9x9 (more taps than the vector kernel takes)
      {"depthwise 5x5", 1, 24, 24, 24, {15, 13}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, true, false},
      {"depthwise 5x5 stride 2", 2, 20, 20, 20, {15, 17}, {5, 5}, {2, 2}, {1, 1}, {2, 1, 2, 3}, true, true, false},
      {"depthwise dilated", 1, 16, 32, 16, {19, 19}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, false, false, false},
      {"depthwise 9x9", 1, 8, 8, 8, {21, 20}, {9, 9}, {1, 1}, {1, 1}, {4, 4, 4, 4}, true, true, false},
  };
  // clang-format on
  nxrt::Env env(NX_LOG_ERROR);
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    ConvData data;
    const std::vector<int64_t> w_dims = Concat({c.out_channels, c.in_channels / c.group}, c.kernel);
    data.w.resize(static_cast<size_t>(Product(w_dims)));
    for (float& v : data.w) v = 0.3f * normal(rng);
    data.b.resize(static_cast<size_t>(c.out_channels));
    for (float& v : data.b) v = normal(rng);
    const std::vector<int64_t> y_dims = Concat({c.batch, c.out_channels}, OutputSpatial(c));
    nxrt::Value x = RandomTensor(Concat({c.batch, c.in_channels}, c.in), rng);
    nxrt::Value z = RandomTensor(y_dims, rng);
    nxrt::Value w = nxrt::Value::Tensor(NX_TYPE_FLOAT, w_dims);
    std::copy(data.w.begin(), data.w.end(), w.data<float>());
    const std::vector<float> xs(x.data<float>(), x.data<float>() + x.size());
    const std::vector<float> zs(z.data<float>(), z.data<float>() + z.size());
    const std::vector<float> expected = ReferenceConv(c, xs, data, zs);

    std::vector<std::string> names = {"x"};
    std::vector<const nxrt::Value*> feeds = {&x};
    if (!c.constant_weights) {
      names.push_back("w");
      feeds.push_back(&w);
    }
    if (c.residual_relu) {
      names.push_back("z");
      feeds.push_back(&z);
    }
    const std::string bytes = ConvModel(c, data);
    std::vector<float> first;
    for (int threads : {1, 2, 3, 8}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      nxrt::SessionOptions options;
      options.SetIntraOpThreads(threads);
      nxrt::Session session(env, bytes.data(), bytes.size(), &options);
      if (c.residual_relu) {
        EXPECT_EQ(session.ep_node_count(0), 1u);  // one FusedConv
      }
      for (int run = 0; run < 2; ++run) {  // the second run reuses the cached plan
        auto y = session.Run(names, feeds);
        ASSERT_EQ(y[0].shape(), y_dims);
        const float* got = y[0].data<float>();
        for (size_t i = 0; i < expected.size(); ++i) {
          ASSERT_NEAR(got[i], expected[i], 1e-4f * std::max(1.0f, std::fabs(expected[i])))
              << "element " << i << " run " << run;
        }
        if (first.empty()) first.assign(got, got + expected.size());
        // Thread counts agree with each other far closer than with the reference.
        for (size_t i = 0; i < expected.size(); ++i)
          ASSERT_NEAR(got[i], first[i], 1e-5f * std::max(1.0f, std::fabs(first[i])));
      }
    }
  }
}

}  // namespace

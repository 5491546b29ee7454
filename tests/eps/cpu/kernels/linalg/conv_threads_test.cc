// Convolutions split over threads (oneDNN primitives in output-channel slices on the session's
// pool, GEMM and depthwise paths split on it too) equal a direct reference convolution at every
// thread count, on shapes whose channel counts are not multiples of the slice width; the
// depthwise bodies of both ISAs on odd planes.
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
  // Without residual_relu: Conv -> this activation (Clip to [0, 6], HardSwish, LeakyRelu with
  // slope 0.1, Sigmoid, HardSigmoid with the defaults, Relu, Tanh, Swish as Sigmoid + Mul), fused
  // into the convolution; empty for none.
  std::string activation = "";
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
  const bool act = !c.residual_relu && !c.activation.empty();
  auto conv = MakeNode("Conv", inputs, {c.residual_relu || act ? "c" : "y"}, "conv");
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
  if (act && c.activation == "Swish") {  // y * Sigmoid(y), fused as FusedConv's Swish
    *g->add_node() = MakeNode("Sigmoid", {"c"}, {"s"}, "sigmoid");
    *g->add_node() = MakeNode("Mul", {"c", "s"}, {"y"}, "swish");
  } else if (act && c.activation == "Clip") {
    *g->add_initializer() = MakeFloatTensor("lo", {}, {0.0f});
    *g->add_initializer() = MakeFloatTensor("hi", {}, {6.0f});
    *g->add_node() = MakeNode("Clip", {"c", "lo", "hi"}, {"y"}, "act");
  } else if (act) {
    auto node = MakeNode(c.activation, {"c"}, {"y"}, "act");
    if (c.activation == "LeakyRelu") {
      auto* alpha = node.add_attribute();
      alpha->set_name("alpha");
      alpha->set_type(onnx::AttributeProto::FLOAT);
      alpha->set_f(0.1f);
    }
    *g->add_node() = node;
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
        if (!c.residual_relu && c.activation == "Clip") acc = std::min(6.0, std::max(0.0, acc));
        if (!c.residual_relu && c.activation == "HardSwish") {
          acc *= std::min(1.0, std::max(0.0, acc / 6.0 + 0.5));
        }
        if (!c.residual_relu && c.activation == "LeakyRelu" && acc < 0) acc *= 0.1;
        if (!c.residual_relu && c.activation == "Sigmoid") acc = 1.0 / (1.0 + std::exp(-acc));
        if (!c.residual_relu && c.activation == "Swish") acc = acc / (1.0 + std::exp(-acc));
        if (!c.residual_relu && c.activation == "Tanh") acc = std::tanh(acc);
        if (!c.residual_relu && c.activation == "HardSigmoid") {
          acc = std::min(1.0, std::max(0.0, 0.2 * acc + 0.5));
        }
        if (!c.residual_relu && c.activation == "Relu") acc = std::max(0.0, acc);
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

// Runs `c` at each thread count (with the CPU EP option isa=`isa` unless empty) and compares
// every run with the reference and with the first run.
void ExpectMatchesReference(nxrt::Env& env, const ConvCase& c,
                            const std::vector<int>& thread_counts, const std::string& isa) {
  SCOPED_TRACE(c.name + (isa.empty() ? "" : " isa=" + isa));
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
  for (int threads : thread_counts) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    nxrt::SessionOptions options;
    options.SetIntraOpThreads(threads);
    if (!isa.empty()) options.SetConfig("ep.cpu.isa", isa);
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    if (c.residual_relu || c.activation == "Swish") {
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
      // 3x3 stride 1 from 16 channels and 16 output tiles on: nxrt's Winograd kernel between
      // two reorders (on AVX2), a batch of 2, odd sizes, asymmetric padding, no bias
      {"3x3 Winograd, batch 2", 2, 24, 40, 1, {18, 21}, {3, 3}, {1, 1}, {1, 1}, {1, 0, 1, 2}, false, true, false},
      {"3x3 Winograd + Add + Relu", 1, 20, 36, 1, {16, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, true},
      {"1-D kernel 5", 2, 24, 72, 1, {50}, {5}, {1}, {1}, {2, 2}, true, true, false},
      // a speech encoder's 1-D convolutions, on oneDNN's direct kernel (PreferDirectKernel in
      // conv_dnnl.cc): odd lengths, batch 2, with and without the fused residual
      {"1-D 64 -> 80 stride 2", 2, 64, 80, 1, {97}, {3}, {2}, {1}, {0, 0}, false, true, false},
      {"1-D 48 -> 48 + Add + Relu", 2, 48, 48, 1, {61}, {3}, {1}, {1}, {1, 1}, true, true, true},
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
      // [H, 1] planes with [kH, 1] kernels, run as [1, H] x [1, kH] (AsRowConvolution): padding,
      // stride and dilation along H, batch 2, a fused residual; and one padded across the width,
      // which keeps its own form
      {"5x1 on H x 1", 2, 20, 36, 1, {45, 1}, {5, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false},
      {"5x1 stride 2 dilation 2", 1, 12, 24, 1, {40, 1}, {5, 1}, {2, 1}, {2, 1}, {3, 0, 1, 0}, false, false, false},
      {"3x1 + Add + Relu", 1, 16, 32, 1, {33, 1}, {3, 1}, {1, 1}, {1, 1}, {1, 0, 1, 0}, true, true, true},
      {"3x1 padded across", 1, 8, 16, 1, {21, 1}, {3, 1}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false},
  };
  // clang-format on
  nxrt::Env env(NX_LOG_ERROR);
  for (const ConvCase& c : cases) ExpectMatchesReference(env, c, {1, 2, 3, 8}, "");
}

// The single-pass depthwise bodies (depthwise_2d.h), AVX2 and AVX-512 each, on planes whose
// widths are not multiples of either vector (1 to 57), rows shorter than a tile of 8, padding
// on one side only, both strides, dilation, a channel multiplier and the fused residual; 3x3,
// 5x5 and 7x7 (input rows reused across output rows); plus kernels that take the other loops
// (3x1, 1x5, 17 wide, stride 3, stride 2 x 1); fused
// activations in registers, after the store and in those other loops.
TEST(ConvDepthwise, BothIsasMatchTheReference) {
  // clang-format off
  const std::vector<ConvCase> cases = {
      {"3x3 56x56", 1, 8, 8, 8, {56, 56}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      {"3x3 7x7", 2, 6, 6, 6, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      {"3x3 1x1 plane", 1, 4, 4, 4, {1, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      {"3x3 rows of 17, 9 rows", 1, 3, 3, 3, {9, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true, false},
      {"3x3 33 wide, no pad", 1, 3, 3, 3, {12, 33}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false},
      {"3x3 pad left/top only", 1, 5, 5, 5, {13, 31}, {3, 3}, {1, 1}, {1, 1}, {2, 1, 0, 0}, true, false, false},
      {"3x3 stride 2 112", 1, 4, 4, 4, {112, 112}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 1, 1}, true, true, false},
      {"3x3 stride 2 odd", 2, 5, 5, 5, {15, 57}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      {"5x5 28x28", 1, 6, 6, 6, {28, 28}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, true, false},
      {"5x5 stride 2 odd", 1, 6, 6, 6, {23, 19}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}, true, true, false},
      {"3x3 dilated 2", 1, 4, 8, 4, {20, 21}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, true, true, false},
      {"3x3 + Add + Relu", 1, 16, 16, 16, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, true},
      {"3x3 stride 2 + Add + Relu", 1, 16, 16, 16, {15, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, true, true},
      {"3x1", 1, 4, 4, 4, {11, 19}, {3, 1}, {1, 1}, {1, 1}, {1, 0, 1, 0}, true, true, false},
      {"1x5 stride 2", 1, 4, 4, 4, {9, 40}, {1, 5}, {2, 2}, {1, 1}, {0, 2, 0, 2}, true, true, false},
      {"7x7", 1, 3, 3, 3, {20, 20}, {7, 7}, {1, 1}, {1, 1}, {3, 3, 3, 3}, true, true, false},
      {"7x7 64 wide, 13 rows", 1, 4, 4, 4, {13, 64}, {7, 7}, {1, 1}, {1, 1}, {3, 3, 3, 3}, true, true, false},
      {"7x7 stride 2 odd", 2, 3, 3, 3, {23, 37}, {7, 7}, {2, 2}, {1, 1}, {3, 2, 3, 1}, true, true, false},
      {"7x7 Swish", 1, 3, 3, 3, {9, 30}, {7, 7}, {1, 1}, {1, 1}, {3, 3, 3, 3}, true, true, false, "Swish"},
      {"17 wide kernel", 1, 2, 2, 2, {6, 40}, {1, 17}, {1, 1}, {1, 1}, {0, 8, 0, 8}, true, true, false},
      {"stride 3", 1, 3, 3, 3, {20, 20}, {3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      {"stride 2 x 1", 1, 3, 3, 3, {20, 21}, {3, 3}, {2, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      {"1-D", 2, 4, 4, 4, {37}, {3}, {1}, {1}, {1, 1}, true, true, false},
      // Fused activations in the bodies' registers, after the store (Tanh), and in the loops of
      // other geometries (stride 3, 1-D).
      {"3x3 Swish", 1, 6, 6, 6, {19, 23}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false, "Swish"},
      {"5x5 stride 2 Swish", 1, 5, 5, 5, {14, 14}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}, true, true, false, "Swish"},
      {"3x3 stride 2 Clip", 1, 4, 4, 4, {17, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, true, false, "Clip"},
      {"3x3 HardSwish", 1, 3, 3, 3, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false, "HardSwish"},
      {"3x3 Sigmoid", 1, 3, 3, 3, {10, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false, "Sigmoid"},
      {"3x3 Tanh", 1, 3, 3, 3, {10, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false, "Tanh"},
      {"stride 3 LeakyRelu", 1, 3, 3, 3, {20, 20}, {3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}, true, true, false, "LeakyRelu"},
      {"1-D Swish", 1, 4, 4, 4, {37}, {3}, {1}, {1}, {1, 1}, true, true, false, "Swish"},
  };
  // clang-format on
  nxrt::Env env(NX_LOG_ERROR);
  for (const std::string isa : {"avx2", "avx512"}) {
    if (isa == "avx512" && !__builtin_cpu_supports("avx512f")) {
      GTEST_SKIP() << "this CPU has no AVX-512: only the AVX2 bodies were tested";
    }
    for (const ConvCase& c : cases) ExpectMatchesReference(env, c, {1, 2}, isa);
  }
}

// The pointwise tiles (pointwise_conv.h), AVX2 and AVX-512 each: output channels that are not a
// multiple of a tile's rows (4 / 8), pixel counts around the 24- and 48-wide tiles and their
// masked last vector (1, 7x7, 14x14, 33, 3136 split into L2 chunks at 2 threads), input channels
// from 1 up, batch 2, 1 to 4 pixels past the last full tile, weights packed once or per run,
// with and without bias, the fused residual + Relu and the activations done in registers (Clip,
// HardSwish, LeakyRelu, Sigmoid, Swish) or after the store (Tanh).
TEST(ConvPointwise, BothIsasMatchTheReference) {
  // clang-format off
  const std::vector<ConvCase> cases = {
      {"16 -> 96, 28x28, Clip", 1, 16, 96, 1, {28, 28}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "Clip"},
      {"24 -> 36, 56x56", 1, 24, 36, 1, {56, 56}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false},
      {"320 -> 20, 7x7 + Add + Relu", 1, 320, 20, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, true},
      {"13 -> 11, 14x14, batch 2, weights at run time", 2, 13, 11, 1, {14, 14}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, false, false},
      {"1 -> 5, 1x1 plane", 2, 1, 5, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "HardSwish"},
      {"9 -> 17, 1x33, LeakyRelu", 1, 9, 17, 1, {1, 33}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "LeakyRelu"},
      {"40 -> 24, 3x16, Sigmoid", 1, 40, 24, 1, {3, 16}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "Sigmoid"},
      {"1-D 7 -> 9, 50", 2, 7, 9, 1, {50}, {1}, {1}, {1}, {0, 0}, false, true, false},
      {"600 -> 8, 21x21", 1, 600, 8, 1, {21, 21}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false},
      // Few pixels (kFewPixels): output channels in the lanes.
      {"577 -> 147, 1 pixel, HardSigmoid", 1, 577, 147, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "HardSigmoid"},
      {"64 -> 16, 1 pixel, Relu", 1, 64, 16, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "Relu"},
      {"37 -> 20, 2x2, batch 2, weights at run time + Add + Relu", 2, 37, 20, 1, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, false, true},
      {"30 -> 9, 1x3, no bias, Sigmoid", 1, 30, 9, 1, {1, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, true, false, "Sigmoid"},
      {"1-D 3 -> 13, 4, LeakyRelu", 1, 3, 13, 1, {4}, {1}, {1}, {1}, {0, 0}, true, true, false, "LeakyRelu"},
      {"20 -> 12, 1x5, Clip", 1, 20, 12, 1, {1, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "Clip"},
      // 1 to 4 pixels past the last full tile (7x7, 1-D 50, 3x17, 14x14) take the few-pixel loop.
      {"12 -> 19, 3x17 + Add + Relu", 2, 12, 19, 1, {3, 17}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, true},
      // Swish and Sigmoid in registers: full and masked tiles, a 1-pixel tail, few pixels.
      {"16 -> 40, 11x11, Swish", 1, 16, 40, 1, {11, 11}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "Swish"},
      {"50 -> 13, 7x7, Swish", 1, 50, 13, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "Swish"},
      {"96 -> 24, 1 pixel, Swish", 1, 96, 24, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "Swish"},
      {"24 -> 96, 1 pixel, Sigmoid", 1, 24, 96, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "Sigmoid"},
      // Tanh: applied to each stored row segment after the tile.
      {"40 -> 24, 3x16, Tanh", 1, 40, 24, 1, {3, 16}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, "Tanh"},
  };
  // clang-format on
  nxrt::Env env(NX_LOG_ERROR);
  for (const std::string isa : {"avx2", "avx512"}) {
    if (isa == "avx512" && !__builtin_cpu_supports("avx512f")) {
      GTEST_SKIP() << "this CPU has no AVX-512: only the AVX2 tiles were tested";
    }
    for (const ConvCase& c : cases) ExpectMatchesReference(env, c, {1, 2}, isa);
  }
}

// The direct path for few input channels (small_depth_conv.h), AVX2 and AVX-512 each: 1 to 4
// input channels, column strides 1 and 2 with row strides 1 to 3, asymmetric padding, dilation,
// 3x3 / 5x5 / 7x7 / 1x3 kernels, output rows shorter than a vector and around the 24- and 48-wide
// tiles, output channels not a multiple of a tile's rows, batch 2, weights packed once or per
// run, no bias, the fused residual + Relu and activations in registers or after the store; at
// 3 threads too, where output rows are split unevenly.
TEST(ConvSmallDepth, BothIsasMatchTheReference) {
  // clang-format off
  const std::vector<ConvCase> cases = {
      {"3 -> 20, 3x3 stride 2, 97x99, Relu", 1, 3, 20, 1, {97, 99}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, true, false, "Relu"},
      {"3 -> 17, 3x3 stride 2, asymmetric pads, HardSwish", 1, 3, 17, 1, {45, 37}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 2, 1}, true, true, false, "HardSwish"},
      {"1 -> 9, 5x5, batch 2, weights at run time, no bias", 2, 1, 9, 1, {23, 50}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, false, false, false},
      {"4 -> 8, 3x3 stride 2 dilation 2 + Add + Relu", 1, 4, 8, 1, {30, 31}, {3, 3}, {2, 2}, {2, 2}, {2, 2, 2, 2}, true, true, true},
      {"3 -> 64, 7x7 stride 2, Clip", 1, 3, 64, 1, {40, 40}, {7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}, true, true, false, "Clip"},
      {"2 -> 5, 3x3 stride 3 x 2", 1, 2, 5, 1, {20, 27}, {3, 3}, {3, 2}, {1, 1}, {1, 1, 1, 1}, true, true, false, "LeakyRelu"},
      {"3 -> 12, 3x3, 9x5 (rows under a vector)", 2, 3, 12, 1, {9, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false},
      {"3 -> 10, 1x3, Sigmoid", 1, 3, 10, 1, {6, 53}, {1, 3}, {1, 1}, {1, 1}, {0, 1, 0, 1}, true, true, false, "Sigmoid"},
      {"3 -> 32, 3x3 stride 2, Swish", 1, 3, 32, 1, {33, 50}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, true, false, "Swish"},
      {"3 -> 16, 3x3 stride 2, no padding, 160 wide", 1, 3, 16, 1, {11, 160}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true, true, false, "HardSigmoid"},
  };
  // clang-format on
  nxrt::Env env(NX_LOG_ERROR);
  for (const std::string isa : {"avx2", "avx512"}) {
    if (isa == "avx512" && !__builtin_cpu_supports("avx512f")) {
      GTEST_SKIP() << "this CPU has no AVX-512: only the AVX2 tiles were tested";
    }
    for (const ConvCase& c : cases) ExpectMatchesReference(env, c, {1, 3}, isa);
  }
}

TEST(ConvDepthwise, UnknownOrMissingIsaIsAClearError) {
  const ConvCase c = {"3x3",        1,    4,    4,    4, {8, 8}, {3, 3}, {1, 1}, {1, 1},
                      {1, 1, 1, 1}, true, true, false};
  const ConvData data{std::vector<float>(36, 0.5f), std::vector<float>(4, 0.0f)};
  const std::string bytes = ConvModel(c, data);
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  options.SetConfig("ep.cpu.isa", "sse9");
  try {
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    FAIL() << "an unknown isa was accepted";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("isa='sse9' is not one of avx2, avx512"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace

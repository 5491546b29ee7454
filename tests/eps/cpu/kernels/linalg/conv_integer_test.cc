// ConvInteger and QLinearConv (eps/cpu/kernels/linalg/quantized_conv.cc: the weights times the
// input's columns of taps straight into the output planes, integer_conv_planes.h) run end to end
// through one-node models equal the operators' definitions computed directly in int64: at 1 to
// 3 threads, on the AVX2 (int16 pairs) and the widest (VNNI quads where the CPU has it, with
// AVX-512 stores) paths, for uint8 and int8 inputs and weights, padding that cuts windows on every
// side, strides, dilations, groups, a batch, 1-D convolutions, per-channel weight zero points,
// weights given at run time, and outputs large enough to be split over threads (ddddocr
// common_old's 24 x 24 3 x 3 over 32 x 80); depthwise convolutions (their direct path,
// depthwise_integer_conv.h) with strides, dilations, a channel multiplier, cut windows and
// run-time weights, on the float kernels and (over 258 taps) the direct int32 loop. QLinearConv
// requantizes the same sums to int8 or uint8, with bias, per-channel scales and a fused Relu.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "eps/cpu/kernels/linalg/int8_tensor_util.h"
#include "test_util.h"

namespace {

using nxrt::test::AddIntAttribute;
using nxrt::test::AddIntsAttribute;
using nxrt::test::AddStringAttribute;
using nxrt::test::AddTensorInput;
using nxrt::test::Int8Tensor;
using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;
using nxrt::test::OnnxInt8Type;
using nxrt::test::RandomInt8;
using nxrt::test::ToProto;
using nxrt::test::ToValue;

struct Case {
  std::string name;
  std::vector<int64_t> x_dims, w_dims;  // [N, C, spatial...], [M, C / group, k...]
  std::vector<int64_t> pads, strides, dilations;
  int64_t group = 1;
  bool x_signed = false, w_signed = true;
  bool per_channel_zp = false;
  bool w_constant = true;
};

struct Operands {
  Int8Tensor x, w, x_zp, w_zp;
};

Operands MakeOperands(const Case& c, std::mt19937& rng) {
  Operands o{
      RandomInt8(c.x_dims, c.x_signed, rng), RandomInt8(c.w_dims, c.w_signed, rng),
      RandomInt8({}, c.x_signed, rng),
      RandomInt8(c.per_channel_zp ? std::vector<int64_t>{c.w_dims[0]} : std::vector<int64_t>{},
                 c.w_signed, rng)};
  // Zero points near the middle of the range, as quantizers choose them.
  for (Int8Tensor* zp : {&o.x_zp, &o.w_zp}) {
    for (auto& z : zp->values) z = (zp->is_signed ? 0 : 128) + z % 20;
  }
  return o;
}

std::vector<int64_t> Spatial(const Case& c, const std::vector<int64_t>& v, int64_t fill) {
  return v.empty() ? std::vector<int64_t>(c.x_dims.size() - 2, fill) : v;
}

std::vector<int64_t> OutputDims(const Case& c) {
  const size_t rank = c.x_dims.size() - 2;
  const auto s = Spatial(c, c.strides, 1), d = Spatial(c, c.dilations, 1);
  const auto p = c.pads.empty() ? std::vector<int64_t>(2 * rank, 0) : c.pads;
  std::vector<int64_t> out{c.x_dims[0], c.w_dims[0]};
  for (size_t i = 0; i < rank; ++i) {
    const int64_t span = (c.w_dims[2 + i] - 1) * d[i] + 1;
    out.push_back((c.x_dims[2 + i] + p[i] + p[rank + i] - span) / s[i] + 1);
  }
  return out;
}

// y[n, m, o...] = sum over the group's channels and the taps inside the input of
// (x - x_zp) (w - w_zp[m]), for 1-D and 2-D convolutions.
std::vector<int32_t> Reference(const Case& c, const Operands& o) {
  const bool one_d = c.x_dims.size() == 3;
  const auto s = Spatial(c, c.strides, 1), d = Spatial(c, c.dilations, 1);
  const size_t rank = c.x_dims.size() - 2;
  const auto p = c.pads.empty() ? std::vector<int64_t>(2 * rank, 0) : c.pads;
  const std::vector<int64_t> y_dims = OutputDims(c);
  const int64_t n_count = c.x_dims[0], ch = c.x_dims[1], m_count = c.w_dims[0];
  const int64_t ih = one_d ? 1 : c.x_dims[2], iw = c.x_dims.back();
  const int64_t kh = one_d ? 1 : c.w_dims[2], kw = c.w_dims.back();
  const int64_t oh = one_d ? 1 : y_dims[2], ow = y_dims.back();
  const int64_t sh = one_d ? 1 : s[0], sw = s.back(), dh = one_d ? 1 : d[0], dw = d.back();
  const int64_t ph = one_d ? 0 : p[0], pw = one_d ? p[0] : p[1];
  const int64_t icg = ch / c.group, ocg = m_count / c.group;
  const int32_t xz = o.x_zp.values[0];
  std::vector<int32_t> y;
  for (int64_t n = 0; n < n_count; ++n)
    for (int64_t m = 0; m < m_count; ++m) {
      const int32_t wz = o.w_zp.values[o.w_zp.values.size() == 1 ? 0 : m];
      const int64_t grp = m / ocg;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          int64_t sum = 0;
          for (int64_t ci = 0; ci < icg; ++ci)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
                if (iy < 0 || iy >= ih || ix < 0 || ix >= iw) continue;
                const int64_t c_in = grp * icg + ci;
                const int32_t xv =
                    o.x.values[static_cast<size_t>(((n * ch + c_in) * ih + iy) * iw + ix)];
                const int32_t wv =
                    o.w.values[static_cast<size_t>(((m * icg + ci) * kh + ky) * kw + kx)];
                sum += int64_t(xv - xz) * (wv - wz);
              }
          y.push_back(static_cast<int32_t>(sum));
        }
    }
  return y;
}

void AddConvAttributes(const Case& c, onnx::NodeProto& node) {
  if (!c.pads.empty()) AddIntsAttribute(&node, "pads", c.pads);
  if (!c.strides.empty()) AddIntsAttribute(&node, "strides", c.strides);
  if (!c.dilations.empty()) AddIntsAttribute(&node, "dilations", c.dilations);
  if (c.group != 1) AddIntAttribute(&node, "group", c.group);
}

struct Result {
  std::vector<int64_t> dims;
  std::vector<int32_t> y;
  int64_t reference_primitives = -1;
};

// Runs the one-node `model` on x (and w, when given at run time): its output (int32, int8 or
// uint8) as int32 values, and the session's count of reference primitives.
Result Run(const onnx::ModelProto& model, const Case& c, const Operands& o, int threads,
           const std::string& isa) {
  const std::string bytes = model.SerializeAsString();
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  options.SetIntraOpThreads(threads);
  if (!isa.empty()) options.SetConfig("ep.cpu.isa", isa);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  nxrt::Value x = ToValue(o.x), w = ToValue(o.w);
  std::vector<nxrt::Value> out =
      c.w_constant ? session.Run({"x"}, {&x}) : session.Run({"x", "w"}, {&x, &w});
  Result r;
  r.dims = out[0].shape();
  for (size_t i = 0; i < out[0].size(); ++i) {
    switch (out[0].type()) {
      case NX_TYPE_INT8:
        r.y.push_back(out[0].data<int8_t>()[i]);
        break;
      case NX_TYPE_UINT8:
        r.y.push_back(out[0].data<uint8_t>()[i]);
        break;
      default:
        r.y.push_back(out[0].data<int32_t>()[i]);
    }
  }
  r.reference_primitives = session.statistic("ep.CPU.reference_primitives");
  return r;
}

Result RunModel(const Case& c, const Operands& o, int threads, const std::string& isa) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  auto* g = model.mutable_graph();
  g->set_name("conv_integer");
  AddTensorInput(g, "x", OnnxInt8Type(c.x_signed), c.x_dims);
  if (c.w_constant) {
    *g->add_initializer() = ToProto("w", o.w);
  } else {
    AddTensorInput(g, "w", OnnxInt8Type(c.w_signed), c.w_dims);
  }
  *g->add_initializer() = ToProto("x_zp", o.x_zp);
  *g->add_initializer() = ToProto("w_zp", o.w_zp);
  onnx::NodeProto node = MakeNode("ConvInteger", {"x", "w", "x_zp", "w_zp"}, {"y"}, "conv");
  AddConvAttributes(c, node);
  *g->add_node() = node;
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT32);
  return Run(model, c, o, threads, isa);
}

Case Make(std::string name, std::vector<int64_t> x, std::vector<int64_t> w,
          std::vector<int64_t> pads = {}, std::vector<int64_t> strides = {},
          std::vector<int64_t> dilations = {}, int64_t group = 1) {
  Case c;
  c.name = std::move(name);
  c.x_dims = std::move(x);
  c.w_dims = std::move(w);
  c.pads = std::move(pads);
  c.strides = std::move(strides);
  c.dilations = std::move(dilations);
  c.group = group;
  return c;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back(Make("common_old's 24 -> 24 3x3 over 32 x 80", {1, 24, 32, 80}, {24, 24, 3, 3},
                       {1, 1, 1, 1}));
  cases.push_back(
      Make("stem 1 -> 24, stride 2", {1, 1, 64, 96}, {24, 1, 3, 3}, {1, 1, 1, 1}, {2, 2}));
  Case wide = Make("int8 x, uint8 w, asymmetric pads cutting windows", {1, 5, 13, 21}, {7, 5, 3, 5},
                   {2, 0, 1, 3});
  wide.x_signed = true;
  wide.w_signed = false;
  cases.push_back(wide);
  Case dilated = Make("dilated, strided, per-channel zero points", {2, 6, 17, 19}, {10, 6, 3, 3},
                      {2, 2, 2, 2}, {2, 1}, {2, 2});
  dilated.per_channel_zp = true;
  cases.push_back(dilated);
  cases.push_back(Make("groups", {1, 8, 20, 23}, {12, 2, 3, 3}, {1, 1, 1, 1}, {}, {}, 4));
  cases.push_back(Make("1-D", {1, 16, 300}, {20, 16, 5}, {2, 2}));
  Case run_time = Make("1x1 with weights at run time", {1, 40, 30, 31}, {33, 40, 1, 1});
  run_time.w_constant = false;
  cases.push_back(run_time);
  // Depthwise (DepthwiseIntegerConv): quantize_dynamic's MobileNetV2 and EfficientNet.
  cases.push_back(Make("depthwise 3x3", {1, 32, 28, 30}, {32, 1, 3, 3}, {1, 1, 1, 1}, {}, {}, 32));
  Case strided = Make("depthwise 3x3 stride 2, int8 x, per-channel zero points", {2, 24, 17, 20},
                      {24, 1, 3, 3}, {1, 1, 1, 1}, {2, 2}, {}, 24);
  strided.x_signed = true;
  strided.per_channel_zp = true;
  cases.push_back(strided);
  Case multiplier = Make("depthwise multiplier 2, dilated, asymmetric pads, uint8 w",
                         {1, 8, 15, 13}, {16, 1, 3, 3}, {2, 0, 1, 3}, {1, 2}, {2, 2}, 8);
  multiplier.w_signed = false;
  cases.push_back(multiplier);
  Case run_time_dw = Make("depthwise 5x5, weights at run time", {1, 16, 12, 40}, {16, 1, 5, 5},
                          {2, 2, 2, 2}, {}, {}, 16);
  run_time_dw.w_constant = false;
  cases.push_back(run_time_dw);
  cases.push_back(Make("depthwise 1-D", {1, 12, 50}, {12, 1, 7}, {3, 3}, {2}, {}, 12));
  // Over 258 taps a float sum could round: the direct int32 loop, stride 2 and 1.
  cases.push_back(Make("depthwise 17x17, stride 2", {1, 4, 20, 22}, {4, 1, 17, 17}, {8, 8, 8, 8},
                       {2, 2}, {}, 4));
  cases.push_back(Make("depthwise 17x17", {1, 3, 18, 19}, {3, 1, 17, 17}, {8, 7, 8, 9}, {}, {}, 3));
  return cases;
}

TEST(ConvInteger, MatchesTheDefinitionAtEveryThreadCountAndPath) {
  std::mt19937 rng(21);
  for (const Case& c : Cases()) {
    const Operands o = MakeOperands(c, rng);
    const std::vector<int32_t> want = Reference(c, o);
    for (const std::string isa : {"avx2", ""}) {
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(c.name + ", isa '" + isa + "', threads " + std::to_string(threads));
        const Result got = RunModel(c, o, threads, isa);
        EXPECT_EQ(got.dims, OutputDims(c));
        ASSERT_EQ(got.y, want);
        EXPECT_EQ(got.reference_primitives, 0);
      }
    }
  }
}

// QLinearConv's requantization: scales, an output zero point, a bias and optionally a fused Relu
// (com.nxrt QLinearConv, what QDQ folding makes of a convolution followed by Relu).
struct Requant {
  float x_scale = 0.f, y_scale = 0.f;
  std::vector<float> w_scale;  // 1 or M
  std::vector<int32_t> bias;   // M
  int32_t y_zp = 0;
  bool y_signed = false;
  bool relu = false;
};

Requant MakeRequant(const Case& c, bool y_signed, bool relu, std::mt19937& rng) {
  Requant q;
  const int64_t m = c.w_dims[0];
  int64_t kdim = 1;
  for (size_t i = 1; i < c.w_dims.size(); ++i) kdim *= c.w_dims[i];
  std::uniform_real_distribution<float> ws(0.002f, 0.02f);
  std::uniform_int_distribution<int32_t> bias(-3000, 3000);
  q.x_scale = 0.05f;
  q.w_scale.resize(c.per_channel_zp ? static_cast<size_t>(m) : 1);
  for (float& v : q.w_scale) v = ws(rng);
  for (int64_t i = 0; i < m; ++i) q.bias.push_back(bias(rng));
  // Sums of kdim products of about 75 x 75 spread over about 75 * 75 * sqrt(kdim): mapped to
  // about +-120 output steps, so that some saturate at both ends.
  q.y_scale = q.x_scale * q.w_scale[0] * 75.f * 75.f * std::sqrt(static_cast<float>(kdim)) / 120.f;
  q.y_zp = y_signed ? 7 : 121;
  q.y_signed = y_signed;
  q.relu = relu;
  return q;
}

// The operator's definition as nxrt documents it (IntegerConvOutput): the scale
// x_scale * w_scale / y_scale in float, the product with the exact sum in double, rounded half
// to even, plus the zero point, saturated (and at least the zero point with a Relu).
std::vector<int32_t> Requantized(const Case& c, const Requant& q, const std::vector<int32_t>& acc) {
  const std::vector<int64_t> y_dims = OutputDims(c);
  const int64_t m_count = y_dims[1];
  int64_t plane = 1;
  for (size_t i = 2; i < y_dims.size(); ++i) plane *= y_dims[i];
  const double lo = q.y_signed ? -128.0 : 0.0, hi = q.y_signed ? 127.0 : 255.0;
  std::vector<int32_t> y(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t m = static_cast<int64_t>(i) / plane % m_count;
    const float s =
        (q.x_scale * q.w_scale[q.w_scale.size() > 1 ? static_cast<size_t>(m) : 0]) / q.y_scale;
    const int64_t sum = int64_t(acc[i]) + q.bias[static_cast<size_t>(m)];
    double r = std::nearbyint(static_cast<double>(sum) * static_cast<double>(s)) + q.y_zp;
    if (q.relu) r = std::max(r, static_cast<double>(q.y_zp));
    y[i] = static_cast<int32_t>(std::clamp(r, lo, hi));
  }
  return y;
}

Result RunQLinearConv(const Case& c, const Operands& o, const Requant& q, int threads,
                      const std::string& isa) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  if (q.relu) {
    auto* nx = model.add_opset_import();
    nx->set_domain("com.nxrt");
    nx->set_version(1);
  }
  auto* g = model.mutable_graph();
  g->set_name("qlinear_conv");
  AddTensorInput(g, "x", OnnxInt8Type(c.x_signed), c.x_dims);
  if (c.w_constant) {
    *g->add_initializer() = ToProto("w", o.w);
  } else {
    AddTensorInput(g, "w", OnnxInt8Type(c.w_signed), c.w_dims);
  }
  *g->add_initializer() = ToProto("x_zp", o.x_zp);
  *g->add_initializer() = ToProto("w_zp", o.w_zp);
  *g->add_initializer() = MakeFloatTensor("x_scale", {}, {q.x_scale});
  *g->add_initializer() = MakeFloatTensor(
      "w_scale", q.w_scale.size() > 1 ? std::vector<int64_t>{c.w_dims[0]} : std::vector<int64_t>{},
      q.w_scale);
  *g->add_initializer() = MakeFloatTensor("y_scale", {}, {q.y_scale});
  nxrt::test::Int8Tensor y_zp{{}, {q.y_zp}, q.y_signed};
  *g->add_initializer() = ToProto("y_zp", y_zp);
  onnx::TensorProto bias;
  bias.set_name("bias");
  bias.set_data_type(onnx::TensorProto::INT32);
  bias.add_dims(c.w_dims[0]);
  for (int32_t b : q.bias) bias.add_int32_data(b);
  *g->add_initializer() = bias;
  onnx::NodeProto node = MakeNode(
      "QLinearConv", {"x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "bias"},
      {"y"}, "conv");
  if (q.relu) {
    node.set_domain("com.nxrt");
    AddStringAttribute(&node, "activation", "Relu");
  }
  AddConvAttributes(c, node);
  *g->add_node() = node;
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(OnnxInt8Type(q.y_signed));
  return Run(model, c, o, threads, isa);
}

// QLinearConv where oneDNN's int8 primitive does not take it (uint8 weights, weight zero points,
// 1-D, run-time weights): tiles requantized as they are summed (integer_conv_planes.h) or the
// depthwise path's planes, for int8 and uint8 outputs, with and without a fused Relu, per-tensor
// and per-channel scales; short last panels (positions not a multiple of 16) and channel counts
// not a multiple of the tile's rows.
TEST(QLinearConv, IntegerPathsMatchTheDefinitionAtEveryThreadCountAndPath) {
  std::mt19937 rng(33);
  int variant = 0;
  for (const Case& c : Cases()) {
    const Operands o = MakeOperands(c, rng);
    const std::vector<int32_t> acc = Reference(c, o);
    const bool y_signed = variant % 2 == 1, relu = variant % 3 == 0;
    ++variant;
    const Requant q = MakeRequant(c, y_signed, relu, rng);
    const std::vector<int32_t> want = Requantized(c, q, acc);
    // Both ends of the range are reached (the scales are meant to saturate some outputs).
    const int32_t lo = y_signed ? -128 : 0, hi = y_signed ? 127 : 255;
    EXPECT_NE(std::find(want.begin(), want.end(), hi), want.end()) << c.name;
    if (!relu) {
      EXPECT_NE(std::find(want.begin(), want.end(), lo), want.end()) << c.name;
    }
    for (const std::string isa : {"avx2", ""}) {
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(c.name + ", isa '" + isa + "', threads " + std::to_string(threads) +
                     (y_signed ? ", int8 y" : ", uint8 y") + (relu ? ", Relu" : ""));
        const Result got = RunQLinearConv(c, o, q, threads, isa);
        EXPECT_EQ(got.dims, OutputDims(c));
        ASSERT_EQ(got.y, want);
        EXPECT_EQ(got.reference_primitives, 0);
      }
    }
  }
}

}  // namespace

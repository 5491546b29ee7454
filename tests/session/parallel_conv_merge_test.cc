// Summed convolution branches of one input merged into one convolution before placement
// (src/session/parallel_conv_merge.h): RepVGG's 3x3 + 1x1 + BN(x), MobileOne's chain of branches
// with a constant, FastViT's x + scale * (dwconv(x) - BN(x)), subtraction on either side,
// strides, dilations, 1-D and asymmetric (1x3 + 3x1) kernels, groups with the identity; and what
// must stay: different dilations, a branch read elsewhere, SAME padding, a constant with spatial
// extent. Each model's outputs are compared with the same model
// run node by node (optimization level 0).
#include "session/parallel_conv_merge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "model/model.h"
#include "test_util.h"

namespace nxrt {
namespace {

using test::AddFloatValue;
using test::AddIntsAttribute;
using test::MakeNode;

struct ConvSpec {
  std::vector<int64_t> kernel;  // spatial
  std::vector<int64_t> pads;    // begin..., end...
  std::vector<int64_t> strides = {};
  std::vector<int64_t> dilations = {};
  int64_t group = 1;
  std::string auto_pad = "";
};

class Builder {
 public:
  Builder(int64_t channels, std::vector<int64_t> spatial) : c_(channels), spatial_(spatial) {
    m_.set_ir_version(8);
    m_.add_opset_import()->set_version(17);
    g_ = m_.mutable_graph();
    g_->set_name("branches");
    std::vector<int64_t> dims = {1, channels};
    dims.insert(dims.end(), spatial.begin(), spatial.end());
    AddFloatValue(g_->add_input(), "x", dims);
    x_dims_ = dims;
  }

  void Conv(const std::string& x, const std::string& y, const ConvSpec& s, bool bias = true) {
    std::vector<int64_t> w_dims = {c_, c_ / s.group};
    w_dims.insert(w_dims.end(), s.kernel.begin(), s.kernel.end());
    Random(y + "_w", w_dims, 0.3f);
    std::vector<std::string> ins = {x, y + "_w"};
    if (bias) {
      Random(y + "_b", {c_}, 0.5f);
      ins.push_back(y + "_b");
    }
    auto n = MakeNode("Conv", ins, {y}, y);
    if (!s.pads.empty()) AddIntsAttribute(&n, "pads", s.pads);
    if (!s.strides.empty()) AddIntsAttribute(&n, "strides", s.strides);
    if (!s.dilations.empty()) AddIntsAttribute(&n, "dilations", s.dilations);
    if (s.group != 1) test::AddIntAttribute(&n, "group", s.group);
    if (!s.auto_pad.empty()) test::AddStringAttribute(&n, "auto_pad", s.auto_pad);
    *g_->add_node() = n;
  }

  void Bn(const std::string& x, const std::string& y) {
    Random(y + "_scale", {c_}, 0.5f, 1.0f);
    Random(y + "_bias", {c_}, 0.3f);
    Random(y + "_mean", {c_}, 0.3f);
    Random(y + "_var", {c_}, 0.2f, 1.0f);
    *g_->add_node() = MakeNode("BatchNormalization",
                               {x, y + "_scale", y + "_bias", y + "_mean", y + "_var"}, {y}, y);
  }

  void Op(const std::string& op, const std::string& a, const std::string& b, const std::string& y) {
    *g_->add_node() = MakeNode(op, {a, b}, {y}, y);
  }

  void Constant(const std::string& name, const std::vector<int64_t>& dims) {
    Random(name, dims, 0.5f);
  }

  std::string Finish(const std::vector<std::string>& outputs,
                     const std::vector<std::vector<int64_t>>& dims) {
    for (size_t i = 0; i < outputs.size(); ++i)
      AddFloatValue(g_->add_output(), outputs[i], dims[i]);
    return m_.SerializeAsString();
  }

  std::vector<int64_t> x_dims() const { return x_dims_; }
  onnx::GraphProto* graph() { return g_; }

 private:
  // Values uniform in [offset - spread, offset + spread].
  void Random(const std::string& name, const std::vector<int64_t>& dims, float spread,
              float offset = 0.0f) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::uniform_real_distribution<float> u(offset - spread, offset + spread);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& e : v) e = u(rng_);
    *g_->add_initializer() = test::MakeFloatTensor(name, dims, v);
  }

  int64_t c_;
  std::vector<int64_t> spatial_, x_dims_;
  onnx::ModelProto m_;
  onnx::GraphProto* g_;
  std::mt19937 rng_{17};
};

// Op types left after the merge, sorted by count.
std::map<std::string, int> OpsAfterMerge(const std::string& bytes, int* merged) {
  auto model = LoadModelFromBuffer(bytes.data(), bytes.size(), "");
  *merged = MergeParallelConvs(*model->graph);
  std::map<std::string, int> ops;
  for (const Node& n : model->graph->nodes) ++ops[n.op_type];
  return ops;
}

std::vector<cxx_api::Value> RunAt(const std::string& bytes, const std::vector<int64_t>& x_dims,
                                  int level) {
  cxx_api::Env env(NX_LOG_ERROR);
  cxx_api::SessionOptions options;
  options.SetOptimizationLevel(level).SetIntraOpThreads(1);
  cxx_api::Session session(env, bytes.data(), bytes.size(), &options);
  cxx_api::Value x = cxx_api::Value::Tensor(NX_TYPE_FLOAT, x_dims);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = normal(rng);
  return session.Run({"x"}, {&x});
}

void ExpectSameAsNodeByNode(const std::string& bytes, const std::vector<int64_t>& x_dims) {
  const std::vector<cxx_api::Value> plain = RunAt(bytes, x_dims, 0),
                                    merged = RunAt(bytes, x_dims, 1);
  ASSERT_EQ(plain.size(), merged.size());
  for (size_t o = 0; o < plain.size(); ++o) {
    ASSERT_EQ(plain[o].shape(), merged[o].shape());
    for (size_t i = 0; i < plain[o].size(); ++i) {
      const float want = plain[o].data<float>()[i];
      ASSERT_NEAR(merged[o].data<float>()[i], want, 2e-4f * std::max(1.0f, std::fabs(want)))
          << "output " << o << " element " << i;
    }
  }
}

const std::vector<int64_t> kImage = {1, 8, 9, 7};

TEST(ParallelConvMerge, RepVggBranchesBecomeOneConv) {
  Builder b(8, {9, 7});
  b.Conv("x", "k3", {{3, 3}, {1, 1, 1, 1}});
  b.Conv("x", "k1", {{1, 1}, {0, 0, 0, 0}});
  b.Bn("x", "id");
  b.Op("Add", "k3", "k1", "s1");
  b.Op("Add", "s1", "id", "s2");
  *b.graph()->add_node() = MakeNode("Relu", {"s2"}, {"y"}, "relu");
  const std::string bytes = b.Finish({"y"}, {kImage});
  int merged = 0;
  EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}}));
  EXPECT_EQ(merged, 2);
  ExpectSameAsNodeByNode(bytes, b.x_dims());
}

TEST(ParallelConvMerge, MobileOneChainWithAConstantAndTheInputItself) {
  Builder b(8, {9, 7});
  b.Conv("x", "k1", {{1, 1}, {0, 0, 0, 0}});
  b.Conv("x", "ka", {{3, 3}, {1, 1, 1, 1}}, false);
  b.Conv("x", "kb", {{3, 3}, {1, 1, 1, 1}});
  b.Constant("c", {8, 1, 1});
  b.Op("Add", "k1", "ka", "s1");
  b.Op("Add", "kb", "s1", "s2");  // the merged branch on the right
  b.Op("Add", "s2", "c", "s3");
  b.Op("Add", "x", "s3", "y");  // the input itself
  const std::string bytes = b.Finish({"y"}, {kImage});
  int merged = 0;
  EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Conv", 1}}));
  EXPECT_EQ(merged, 4);
  ExpectSameAsNodeByNode(bytes, b.x_dims());
}

TEST(ParallelConvMerge, FastVitRepMixerScaledDifferenceAndResidual) {
  Builder b(8, {9, 7});
  b.Conv("x", "dw", {{3, 3}, {1, 1, 1, 1}, {}, {}, 8});
  b.Bn("x", "norm");
  b.Constant("scale", {8, 1, 1});
  b.Op("Sub", "dw", "norm", "d");
  b.Op("Mul", "d", "scale", "m");
  b.Op("Add", "x", "m", "y");
  const std::string bytes = b.Finish({"y"}, {kImage});
  int merged = 0;
  EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Conv", 1}}));
  EXPECT_EQ(merged, 3);
  ExpectSameAsNodeByNode(bytes, b.x_dims());
}

TEST(ParallelConvMerge, SubtractionWithTheConvolutionOnEitherSide) {
  Builder b(8, {9, 7});
  b.Conv("x", "a", {{3, 3}, {1, 1, 1, 1}});
  b.Bn("x", "n");
  b.Op("Sub", "n", "a", "d1");  // BN(x) - conv(x)
  b.Conv("x", "c", {{1, 1}, {0, 0, 0, 0}});
  b.Constant("k", {1});
  b.Op("Sub", "c", "k", "d2");  // conv(x) - constant
  const std::string bytes = b.Finish({"d1", "d2"}, {kImage, kImage});
  int merged = 0;
  EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Conv", 2}}));
  ExpectSameAsNodeByNode(bytes, b.x_dims());
}

TEST(ParallelConvMerge, StridesDilationsAsymmetricKernelsAndOneDimension) {
  {  // stride 2: 3x3 pad 1 + 1x1 pad 0 sample the same output pixels
    Builder b(8, {9, 7});
    b.Conv("x", "a", {{3, 3}, {1, 1, 1, 1}, {2, 2}});
    b.Conv("x", "c", {{1, 1}, {0, 0, 0, 0}, {2, 2}});
    b.Op("Add", "a", "c", "y");
    const std::string bytes = b.Finish({"y"}, {{1, 8, 5, 4}});
    int merged = 0;
    EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Conv", 1}}));
    ExpectSameAsNodeByNode(bytes, b.x_dims());
  }
  {  // dilation 2: 3x3 pad 2 + 1x1 pad 0 + BN(x)
    Builder b(8, {9, 7});
    b.Conv("x", "a", {{3, 3}, {2, 2, 2, 2}, {}, {2, 2}});
    b.Conv("x", "c", {{1, 1}, {0, 0, 0, 0}, {}, {2, 2}});
    b.Bn("x", "n");
    b.Op("Add", "a", "c", "s");
    b.Op("Add", "n", "s", "y");
    const std::string bytes = b.Finish({"y"}, {kImage});
    int merged = 0;
    EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Conv", 1}}));
    ExpectSameAsNodeByNode(bytes, b.x_dims());
  }
  {  // ACNet: 3x3 + 1x3 + 3x1
    Builder b(8, {9, 7});
    b.Conv("x", "sq", {{3, 3}, {1, 1, 1, 1}});
    b.Conv("x", "hor", {{1, 3}, {0, 1, 0, 1}});
    b.Conv("x", "ver", {{3, 1}, {1, 0, 1, 0}});
    b.Op("Add", "hor", "ver", "s");
    b.Op("Add", "sq", "s", "y");
    const std::string bytes = b.Finish({"y"}, {kImage});
    int merged = 0;
    EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Conv", 1}}));
    ExpectSameAsNodeByNode(bytes, b.x_dims());
  }
  {  // 1-D, asymmetric padding: k5 pads (2, 2) + k3 pads (1, 1) + k2 pads (1, 0)
    Builder b(8, {11});
    b.Conv("x", "a", {{5}, {2, 2}});
    b.Conv("x", "c", {{3}, {1, 1}});
    b.Conv("x", "e", {{2}, {1, 0}});
    b.Op("Add", "a", "c", "s");
    b.Op("Add", "s", "e", "y");
    const std::string bytes = b.Finish({"y"}, {{1, 8, 11}});
    int merged = 0;
    EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Conv", 1}}));
    ExpectSameAsNodeByNode(bytes, b.x_dims());
  }
  {  // groups of 4 channels with the identity
    Builder b(8, {9, 7});
    b.Conv("x", "g", {{3, 3}, {1, 1, 1, 1}, {}, {}, 2});
    b.Op("Add", "g", "x", "y");
    const std::string bytes = b.Finish({"y"}, {kImage});
    int merged = 0;
    EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Conv", 1}}));
    ExpectSameAsNodeByNode(bytes, b.x_dims());
  }
}

TEST(ParallelConvMerge, WhatCannotMergeStays) {
  {  // different dilations
    Builder b(8, {9, 7});
    b.Conv("x", "a", {{3, 3}, {1, 1, 1, 1}});
    b.Conv("x", "c", {{3, 3}, {2, 2, 2, 2}, {}, {2, 2}});
    b.Op("Add", "a", "c", "y");
    const std::string bytes = b.Finish({"y"}, {kImage});
    int merged = 0;
    EXPECT_EQ(OpsAfterMerge(bytes, &merged)["Conv"], 2);
    EXPECT_EQ(merged, 0);
    ExpectSameAsNodeByNode(bytes, b.x_dims());
  }
  {  // a branch that is also a graph output, and SAME padding
    Builder b(8, {9, 7});
    b.Conv("x", "a", {{3, 3}, {1, 1, 1, 1}});
    b.Conv("x", "c", {{1, 1}, {0, 0, 0, 0}});
    b.Op("Add", "a", "c", "y");
    b.Conv("x", "same", {{3, 3}, {}, {}, {}, 1, "SAME_UPPER"});
    b.Conv("x", "d", {{1, 1}, {0, 0, 0, 0}});
    b.Op("Add", "same", "d", "z");
    const std::string bytes = b.Finish({"y", "a", "z"}, {kImage, kImage, kImage});
    int merged = 0;
    EXPECT_EQ(OpsAfterMerge(bytes, &merged)["Conv"], 4);
    EXPECT_EQ(merged, 0);
    ExpectSameAsNodeByNode(bytes, b.x_dims());
  }
  {  // a constant with spatial extent
    Builder b(8, {9, 7});
    b.Conv("x", "a", {{3, 3}, {1, 1, 1, 1}});
    b.Constant("plane", {1, 1, 9, 7});
    b.Op("Add", "a", "plane", "y");
    const std::string bytes = b.Finish({"y"}, {kImage});
    int merged = 0;
    EXPECT_EQ(OpsAfterMerge(bytes, &merged), (std::map<std::string, int>{{"Add", 1}, {"Conv", 1}}));
    EXPECT_EQ(merged, 0);
    ExpectSameAsNodeByNode(bytes, b.x_dims());
  }
}

}  // namespace
}  // namespace nxrt

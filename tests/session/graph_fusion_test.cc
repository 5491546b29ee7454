// Post-placement fusion: chains become one node only where the EP has the fused kernel, and the
// results equal the unfused graph's.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nxrt/nxrt.hpp>
#include <random>

#include "test_util.h"

namespace {

using nxrt::test::AddFloatValue;
using nxrt::test::AddIntAttribute;
using nxrt::test::AddIntsAttribute;
using nxrt::test::MakeNode;

// x[1,4,6,6] -> Conv(3x3, pad 1) -> Add(residual x) -> Relu, plus a separate erf-GELU branch.
std::string ConvAddReluGeluModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("fusion");
  auto conv = MakeNode("Conv", {"x", "w", "b"}, {"c"}, "conv");
  AddIntsAttribute(&conv, "pads", {1, 1, 1, 1});
  *g->add_node() = conv;
  *g->add_node() = MakeNode("Add", {"c", "x"}, {"s"}, "residual");
  *g->add_node() = MakeNode("Relu", {"s"}, {"y"}, "relu");
  *g->add_node() = MakeNode("Div", {"x", "sqrt2"}, {"d"}, "div");
  *g->add_node() = MakeNode("Erf", {"d"}, {"e"}, "erf");
  *g->add_node() = MakeNode("Add", {"e", "one"}, {"e1"}, "add1");
  *g->add_node() = MakeNode("Mul", {"x", "e1"}, {"m"}, "mulx");
  *g->add_node() = MakeNode("Mul", {"m", "half"}, {"gelu"}, "half");
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> w(4 * 4 * 9), b(4);
  for (float& v : w) v = normal(rng) * 0.3f;
  for (float& v : b) v = normal(rng);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {4, 4, 3, 3}, w);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("b", {4}, b);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("sqrt2", {}, {1.41421356f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("one", {}, {1.0f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("half", {}, {0.5f});
  AddFloatValue(g->add_input(), "x", {1, 4, 6, 6});
  AddFloatValue(g->add_output(), "y", {1, 4, 6, 6});
  AddFloatValue(g->add_output(), "gelu", {1, 4, 6, 6});
  return m.SerializeAsString();
}

TEST(GraphFusion, FusedGraphMatchesUnfusedGraph) {
  nxrt::Env env(NX_LOG_ERROR);
  std::string bytes = ConvAddReluGeluModel();
  nxrt::SessionOptions plain_options, fused_options;
  // One thread: no OpenMP workers, which LeakSanitizer cannot stop in some sandboxes.
  plain_options.SetOptimizationLevel(0).SetIntraOpThreads(1);
  fused_options.SetOptimizationLevel(1).SetIntraOpThreads(1);
  nxrt::Session plain(env, bytes.data(), bytes.size(), &plain_options);
  nxrt::Session fused(env, bytes.data(), bytes.size(), &fused_options);
  EXPECT_EQ(plain.ep_node_count(0), 8u);
  EXPECT_EQ(fused.ep_node_count(0), 2u);  // FusedConv(+Add+Relu) and Gelu

  std::vector<int64_t> dims = {1, 4, 6, 6};
  nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = normal(rng);
  auto a = plain.Run({"x"}, {&x});
  auto b = fused.Run({"x"}, {&x});
  for (size_t o = 0; o < 2; ++o) {
    ASSERT_EQ(a[o].shape(), b[o].shape());
    for (size_t i = 0; i < a[o].size(); ++i) {
      EXPECT_NEAR(a[o].data<float>()[i], b[o].data<float>()[i], 1e-5f)
          << "output " << o << " element " << i;
    }
  }
}

// x[1,8,6,6] -> Conv(k x k, pad k/2, `group`) -> `activation`: HardSwish, Clip(-2, 5), SiLU
// (Sigmoid, then Mul(conv, sigmoid)) or HardSwish written out (Add 3, Clip 0..6, Mul, Div 6): one
// model per convolution path of the CPU EP (3x3: oneDNN primitive, 1x1: GEMM, depthwise: our own
// loop).
std::string ConvActivationModel(int64_t k, int64_t group, const std::string& activation) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("conv_hardswish");
  auto conv = MakeNode("Conv", {"x", "w", "b"}, {"c"}, "conv");
  AddIntsAttribute(&conv, "pads", {k / 2, k / 2, k / 2, k / 2});
  AddIntAttribute(&conv, "group", group);
  *g->add_node() = conv;
  if (activation == "SiLU") {
    *g->add_node() = MakeNode("Sigmoid", {"c"}, {"s"}, "sigmoid");
    *g->add_node() = MakeNode("Mul", {"s", "c"}, {"y"}, "mul");
  } else if (activation == "HardSwishWritten") {  // c * Clip(c + 3, 0, 6) / 6, as Paddle writes it
    *g->add_node() = MakeNode("Add", {"c", "three"}, {"c3"}, "add3");
    *g->add_node() = MakeNode("Clip", {"c3", "zero", "six"}, {"r6"}, "relu6");
    *g->add_node() = MakeNode("Mul", {"r6", "c"}, {"m"}, "mul");
    *g->add_node() = MakeNode("Div", {"m", "six"}, {"y"}, "div6");
    *g->add_initializer() = nxrt::test::MakeFloatTensor("three", {1}, {3.0f});
    *g->add_initializer() = nxrt::test::MakeFloatTensor("zero", {}, {0.0f});
    *g->add_initializer() = nxrt::test::MakeFloatTensor("six", {}, {6.0f});
  } else if (activation == "Clip") {
    *g->add_node() = MakeNode("Clip", {"c", "lo", "hi"}, {"y"}, "clip");
    *g->add_initializer() = nxrt::test::MakeFloatTensor("lo", {}, {-2.0f});
    *g->add_initializer() = nxrt::test::MakeFloatTensor("hi", {}, {5.0f});
  } else {
    *g->add_node() = MakeNode("HardSwish", {"c"}, {"y"}, "hardswish");
  }
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> w(8 * (8 / group) * k * k), b(8);
  for (float& v : w) v = normal(rng) * 0.5f;
  for (float& v : b) v = normal(rng);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {8, 8 / group, k, k}, w);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("b", {8}, b);
  AddFloatValue(g->add_input(), "x", {1, 8, 6, 6});
  AddFloatValue(g->add_output(), "y", {1, 8, 6, 6});
  return m.SerializeAsString();
}

TEST(GraphFusion, ConvActivationsFuseOnEveryConvolutionPath) {
  nxrt::Env env(NX_LOG_ERROR);
  const struct { int64_t k, group; } cases[] = {{3, 1}, {1, 1}, {3, 8}};
  for (const std::string activation : {"HardSwish", "SiLU", "Clip", "HardSwishWritten"}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(activation + " kernel " + std::to_string(c.k) + " group " +
                   std::to_string(c.group));
      std::string bytes = ConvActivationModel(c.k, c.group, activation);
      nxrt::SessionOptions plain_options, fused_options;
      plain_options.SetOptimizationLevel(0).SetIntraOpThreads(1);
      fused_options.SetOptimizationLevel(1).SetIntraOpThreads(1);
      nxrt::Session plain(env, bytes.data(), bytes.size(), &plain_options);
      nxrt::Session fused(env, bytes.data(), bytes.size(), &fused_options);
      EXPECT_EQ(plain.ep_node_count(0),
                activation == "SiLU" ? 3u : (activation == "HardSwishWritten" ? 5u : 2u));
      EXPECT_EQ(fused.ep_node_count(0), 1u);  // FusedConv with the activation

      const std::vector<int64_t> dims = {1, 8, 6, 6};
      nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
      std::mt19937 rng(5);
      std::normal_distribution<float> normal;
      // Wide values: the outputs cross HardSwish's corners at -3 and 3 and reach SiLU's tails.
      for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = 4.0f * normal(rng);
      x.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();  // NaN stays NaN
      auto a = plain.Run({"x"}, {&x});
      auto b = fused.Run({"x"}, {&x});
      ASSERT_EQ(a[0].shape(), b[0].shape());
      int nans = 0, negative = 0, large = 0;
      for (size_t i = 0; i < a[0].size(); ++i) {
        const float va = a[0].data<float>()[i], vb = b[0].data<float>()[i];
        if (std::isnan(va)) {
          EXPECT_TRUE(std::isnan(vb)) << "element " << i;
          ++nans;
          continue;
        }
        EXPECT_NEAR(va, vb, 1e-5f * std::max(1.0f, std::fabs(va))) << "element " << i;
        negative += va < -0.1f;
        large += va > 3.0f;
      }
      EXPECT_GT(nans, 0);
      EXPECT_GT(negative, 0);  // both sides of the activation were reached
      EXPECT_GT(large, 0);
    }
  }
}

// Conv -> Mul(a) -> Add(b) with single-element constants (Paddle's affine after a convolution),
// folded into new weights and bias: with and without a bias, Mul or Add alone, followed by a
// written-out HardSwish; a second convolution shares the weight and must still see it unscaled;
// a constant of higher rank than the output (it would broadcast) is not folded.
// The start of the folding models: opset 13, x -> Conv(w[, b], pad 1) -> "c", and a second
// convolution x -> Conv(w) -> "y2" sharing the weight (a fold must not scale it for that one).
onnx::GraphProto* ConvWithSharedWeight(onnx::ModelProto& m, const std::string& name, bool bias) {
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name(name);
  std::vector<std::string> conv_in = {"x", "w"};
  if (bias) conv_in.push_back("b");
  auto conv = MakeNode("Conv", conv_in, {"c"}, "conv");
  AddIntsAttribute(&conv, "pads", {1, 1, 1, 1});
  *g->add_node() = conv;
  auto conv2 = MakeNode("Conv", {"x", "w"}, {"y2"}, "conv_shared_weight");
  AddIntsAttribute(&conv2, "pads", {1, 1, 1, 1});
  *g->add_node() = conv2;
  return g;
}

// Runs a folding model unoptimised and optimised on the same inputs: the optimised session has
// `fused_nodes` nodes and every output equals the unoptimised one. Returns the unoptimised
// outputs.
std::vector<nxrt::Value> ExpectFoldedMatchesPlain(nxrt::Env& env, const std::string& bytes,
                                                  const std::vector<std::string>& names,
                                                  const std::vector<const nxrt::Value*>& inputs,
                                                  size_t fused_nodes) {
  nxrt::SessionOptions plain_options, fused_options;
  plain_options.SetOptimizationLevel(0).SetIntraOpThreads(1);
  fused_options.SetOptimizationLevel(1).SetIntraOpThreads(1);
  nxrt::Session plain(env, bytes.data(), bytes.size(), &plain_options);
  nxrt::Session fused(env, bytes.data(), bytes.size(), &fused_options);
  EXPECT_EQ(fused.ep_node_count(0), fused_nodes);
  auto a = plain.Run(names, inputs);
  auto f = fused.Run(names, inputs);
  EXPECT_EQ(a.size(), f.size());
  for (size_t o = 0; o < a.size() && o < f.size(); ++o) {
    EXPECT_EQ(a[o].shape(), f[o].shape());
    if (a[o].shape() != f[o].shape()) continue;
    for (size_t i = 0; i < a[o].size(); ++i) {
      const float va = a[o].data<float>()[i];
      EXPECT_NEAR(va, f[o].data<float>()[i], 2e-5f * std::max(1.0f, std::fabs(va)))
          << "output " << o << " element " << i;
    }
  }
  return a;
}

std::string ConvAffineModel(bool bias, bool mul, bool add, bool hard_swish, int64_t const_rank) {
  onnx::ModelProto m;
  auto* g = ConvWithSharedWeight(m, "conv_affine", bias);
  std::string v = "c";
  const std::vector<int64_t> const_dims(static_cast<size_t>(const_rank), 1);
  if (mul) {
    *g->add_node() = MakeNode("Mul", {"a", v}, {"ca"}, "scale");
    *g->add_initializer() = nxrt::test::MakeFloatTensor("a", const_dims, {0.75f});
    v = "ca";
  }
  if (add) {
    *g->add_node() = MakeNode("Add", {v, "shift"}, {"cb"}, "shift");
    *g->add_initializer() = nxrt::test::MakeFloatTensor("shift", const_dims, {-0.4f});
    v = "cb";
  }
  if (hard_swish) {
    *g->add_node() = MakeNode("Add", {v, "three"}, {"v3"}, "add3");
    *g->add_node() = MakeNode("Clip", {"v3", "zero", "six"}, {"r6"}, "relu6");
    *g->add_node() = MakeNode("Mul", {v, "r6"}, {"hm"}, "mul");
    *g->add_node() = MakeNode("Div", {"hm", "six"}, {"y"}, "div6");
    *g->add_initializer() = nxrt::test::MakeFloatTensor("three", {}, {3.0f});
    *g->add_initializer() = nxrt::test::MakeFloatTensor("zero", {}, {0.0f});
    *g->add_initializer() = nxrt::test::MakeFloatTensor("six", {}, {6.0f});
  } else {
    *g->add_node() = MakeNode("Identity", {v}, {"y"}, "out");
  }
  std::mt19937 rng(13);
  std::normal_distribution<float> normal;
  std::vector<float> w(6 * 3 * 9), b(6);
  for (float& x : w) x = normal(rng) * 0.5f;
  for (float& x : b) x = normal(rng);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {6, 3, 3, 3}, w);
  if (bias) *g->add_initializer() = nxrt::test::MakeFloatTensor("b", {6}, b);
  AddFloatValue(g->add_input(), "x", {1, 3, 7, 9});
  AddFloatValue(g->add_output(), "y", {1, 6, 7, 9});
  AddFloatValue(g->add_output(), "y2", {1, 6, 7, 9});
  return m.SerializeAsString();
}

TEST(GraphFusion, ScalarAffineAfterConvFoldsIntoItsWeights) {
  nxrt::Env env(NX_LOG_ERROR);
  const struct {
    bool bias, mul, add, hard_swish;
    int64_t const_rank;
    size_t fused_nodes;  // after fusion: the folded FusedConv (+ Identity), the shared-weight Conv
  } cases[] = {{true, true, true, true, 1, 2},
               {false, true, true, false, 0, 3},
               {true, true, false, false, 4, 3},
               {false, false, true, true, 2, 2},
               {true, true, true, false, 5, 5}};  // rank 5 > 4: nothing folds
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.bias ? "bias" : "no bias") + (c.mul ? " Mul" : "") +
                 (c.add ? " Add" : "") + (c.hard_swish ? " HardSwish" : "") + " constant rank " +
                 std::to_string(c.const_rank));
    std::string bytes = ConvAffineModel(c.bias, c.mul, c.add, c.hard_swish, c.const_rank);
    const std::vector<int64_t> dims = {1, 3, 7, 9};
    nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
    std::mt19937 rng(17);
    std::normal_distribution<float> normal;
    for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = 2.0f * normal(rng);
    ExpectFoldedMatchesPlain(env, bytes, {"x"}, {&x}, c.fused_nodes);
  }
}

// Conv -> BatchNormalization (inference: constant scale, bias, mean, variance) -> optional
// single-element Mul -> Relu, the BatchNormalization folded into new weights and bias so the Relu
// fuses too; a second convolution shares the weight and must see it unscaled. A mean that is a
// graph input (not a constant) keeps the BatchNormalization node.
std::string ConvBatchNormModel(bool bias, bool mul_after, bool constant_mean) {
  onnx::ModelProto m;
  auto* g = ConvWithSharedWeight(m, "conv_batch_norm", bias);
  auto bn = MakeNode("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"}, "bn");
  auto* eps = bn.add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(1e-3f);
  *g->add_node() = bn;
  std::string v = "n";
  if (mul_after) {
    *g->add_node() = MakeNode("Mul", {v, "a"}, {"na"}, "scale");
    *g->add_initializer() = nxrt::test::MakeFloatTensor("a", {1}, {-1.5f});
    v = "na";
  }
  *g->add_node() = MakeNode("Relu", {v}, {"y"}, "relu");
  std::mt19937 rng(23);
  std::normal_distribution<float> normal;
  std::vector<float> w(5 * 3 * 9), b(5), gamma(5), beta(5), mean(5), var(5);
  for (float& x : w) x = normal(rng) * 0.5f;
  for (float& x : b) x = normal(rng);
  for (float& x : gamma) x = normal(rng);
  for (float& x : beta) x = normal(rng);
  for (float& x : mean) x = normal(rng);
  for (float& x : var) x = 0.1f + std::fabs(normal(rng));
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {5, 3, 3, 3}, w);
  if (bias) *g->add_initializer() = nxrt::test::MakeFloatTensor("b", {5}, b);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("gamma", {5}, gamma);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("beta", {5}, beta);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("var", {5}, var);
  if (constant_mean) {
    *g->add_initializer() = nxrt::test::MakeFloatTensor("mean", {5}, mean);
  } else {
    AddFloatValue(g->add_input(), "mean", {5});
  }
  AddFloatValue(g->add_input(), "x", {1, 3, 6, 11});
  AddFloatValue(g->add_output(), "y", {1, 5, 6, 11});
  AddFloatValue(g->add_output(), "y2", {1, 5, 6, 11});
  return m.SerializeAsString();
}

TEST(GraphFusion, BatchNormAfterConvFoldsIntoItsWeights) {
  nxrt::Env env(NX_LOG_ERROR);
  const struct {
    bool bias, mul_after, constant_mean;
    size_t fused_nodes;  // the folded FusedConv (BN, Mul, Relu inside) + the shared-weight Conv
  } cases[] = {{true, false, true, 2}, {false, true, true, 2}, {true, false, false, 4}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.bias ? "bias" : "no bias") + (c.mul_after ? ", Mul after" : "") +
                 (c.constant_mean ? "" : ", mean not constant"));
    std::string bytes = ConvBatchNormModel(c.bias, c.mul_after, c.constant_mean);
    const std::vector<int64_t> x_dims = {1, 3, 6, 11}, mean_dims = {5};
    nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, x_dims);
    nxrt::Value mean = nxrt::Value::Tensor(NX_TYPE_FLOAT, mean_dims);
    std::mt19937 rng(29);
    std::normal_distribution<float> normal;
    for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = 2.0f * normal(rng);
    for (size_t i = 0; i < mean.size(); ++i) mean.data<float>()[i] = normal(rng);
    std::vector<std::string> names = {"x"};
    std::vector<const nxrt::Value*> inputs = {&x};
    if (!c.constant_mean) {
      names.push_back("mean");
      inputs.push_back(&mean);
    }
    const std::vector<nxrt::Value> a =
        ExpectFoldedMatchesPlain(env, bytes, names, inputs, c.fused_nodes);
    ASSERT_FALSE(a.empty());
    size_t positive = 0;
    for (size_t i = 0; i < a[0].size(); ++i) positive += a[0].data<float>()[i] > 0.0f;
    EXPECT_GT(positive, a[0].size() / 4);  // the Relu passes a fair share: not all zeros
  }
}

// HardSwish written out on a graph input (no convolution to fuse into): x -> Add 3 -> Clip 0..6
// -> Mul x -> Div 6 (or Mul 1/6), operands in either order, becomes one HardSwish node; with
// other constants (Clip to 5, Div by 5) the chain stays as it is. Results equal either way.
std::string WrittenHardSwishModel(bool mul_by_sixth, bool swapped, float clip_max, float divisor) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("hard_swish_written");
  *g->add_node() = MakeNode(
      "Add",
      swapped ? std::vector<std::string>{"three", "x"} : std::vector<std::string>{"x", "three"},
      {"x3"}, "add3");
  *g->add_node() = MakeNode("Clip", {"x3", "zero", "max"}, {"r"}, "clip");
  *g->add_node() = MakeNode(
      "Mul", swapped ? std::vector<std::string>{"x", "r"} : std::vector<std::string>{"r", "x"},
      {"m"}, "mul");
  if (mul_by_sixth) {
    *g->add_node() = MakeNode("Mul", {"m", "scale"}, {"y"}, "scale");
    *g->add_initializer() = nxrt::test::MakeFloatTensor("scale", {}, {1.0f / divisor});
  } else {
    *g->add_node() = MakeNode("Div", {"m", "scale"}, {"y"}, "scale");
    *g->add_initializer() = nxrt::test::MakeFloatTensor("scale", {}, {divisor});
  }
  *g->add_initializer() = nxrt::test::MakeFloatTensor("three", {}, {3.0f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("zero", {}, {0.0f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("max", {}, {clip_max});
  AddFloatValue(g->add_input(), "x", {2, 3, 37});
  AddFloatValue(g->add_output(), "y", {2, 3, 37});
  return m.SerializeAsString();
}

TEST(GraphFusion, WrittenOutHardSwishBecomesOneNode) {
  nxrt::Env env(NX_LOG_ERROR);
  const struct {
    bool mul_by_sixth, swapped;
    float clip_max, divisor;
    bool fuses;
  } cases[] = {{false, false, 6.0f, 6.0f, true},
               {true, true, 6.0f, 6.0f, true},
               {false, false, 5.0f, 6.0f, false},
               {false, true, 6.0f, 5.0f, false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.mul_by_sixth ? "Mul 1/6" : "Div 6") + (c.swapped ? " swapped" : "") +
                 " clip max " + std::to_string(c.clip_max) + " divisor " +
                 std::to_string(c.divisor));
    std::string bytes = WrittenHardSwishModel(c.mul_by_sixth, c.swapped, c.clip_max, c.divisor);
    nxrt::SessionOptions plain_options, fused_options;
    plain_options.SetOptimizationLevel(0).SetIntraOpThreads(1);
    fused_options.SetOptimizationLevel(1).SetIntraOpThreads(1);
    nxrt::Session plain(env, bytes.data(), bytes.size(), &plain_options);
    nxrt::Session fused(env, bytes.data(), bytes.size(), &fused_options);
    EXPECT_EQ(plain.ep_node_count(0), 4u);
    EXPECT_EQ(fused.ep_node_count(0), c.fuses ? 1u : 4u);
    const std::vector<int64_t> dims = {2, 3, 37};
    nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
    for (size_t i = 0; i < x.size(); ++i)  // -5.5 .. 5.6: both corners and the middle
      x.data<float>()[i] = -5.5f + 0.05f * static_cast<float>(i);
    x.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
    auto a = plain.Run({"x"}, {&x});
    auto b = fused.Run({"x"}, {&x});
    for (size_t i = 0; i < a[0].size(); ++i) {
      const float va = a[0].data<float>()[i], vb = b[0].data<float>()[i];
      if (std::isnan(va)) {
        EXPECT_TRUE(std::isnan(vb)) << "element " << i;
        continue;
      }
      EXPECT_NEAR(va, vb, 1e-6f * std::max(1.0f, std::fabs(va))) << "element " << i;
    }
  }
}

// Adds graph output `name`, a float tensor whose shape inference decides.
void AddFloatOutput(onnx::GraphProto* g, const std::string& name) {
  auto* out = g->add_output();
  out->set_name(name);
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

// Runs `bytes` unfused (optimization level 0) and fused (level 1) on 1 and 2 threads: the EP's
// node counts, then every output equal within 2e-5 relative (NaN where the unfused one has NaN).
void ExpectFusionKeepsOutputs(const std::string& bytes, size_t unfused_nodes, size_t fused_nodes,
                              const std::vector<std::string>& names,
                              const std::vector<const nxrt::Value*>& inputs) {
  nxrt::Env env(NX_LOG_ERROR);
  for (int threads : {1, 2}) {
    nxrt::SessionOptions plain_options, fused_options;
    plain_options.SetOptimizationLevel(0).SetIntraOpThreads(threads);
    fused_options.SetOptimizationLevel(1).SetIntraOpThreads(threads);
    nxrt::Session plain(env, bytes.data(), bytes.size(), &plain_options);
    nxrt::Session fused(env, bytes.data(), bytes.size(), &fused_options);
    EXPECT_EQ(plain.ep_node_count(0), unfused_nodes);
    EXPECT_EQ(fused.ep_node_count(0), fused_nodes);
    auto want = plain.Run(names, inputs);
    auto got = fused.Run(names, inputs);
    ASSERT_EQ(want.size(), got.size());
    for (size_t o = 0; o < want.size(); ++o) {
      ASSERT_EQ(want[o].shape(), got[o].shape());
      for (size_t i = 0; i < want[o].size(); ++i) {
        const float a = want[o].data<float>()[i], b = got[o].data<float>()[i];
        if (std::isnan(a)) {
          ASSERT_TRUE(std::isnan(b)) << threads << " threads, output " << o << ", element " << i;
          continue;
        }
        ASSERT_NEAR(a, b, 2e-5f * std::max(1.0f, std::fabs(a)))
            << threads << " threads, output " << o << ", element " << i;
      }
    }
  }
}

nxrt::Value RandomFloats(const std::vector<int64_t>& dims, std::mt19937& rng, float mean = 0.0f,
                         float spread = 1.0f) {
  std::normal_distribution<float> normal(mean, spread);
  nxrt::Value t = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  for (size_t i = 0; i < t.size(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

// a[rows, 37] -> MatMul(W [37, 150]) -> Add(bias) -> activation (none, Relu, LeakyRelu, the
// written-out erf Gelu or com.microsoft Gelu), the Add's operands in either order.
struct MatMulChain {
  std::string activation;          // "", "Relu", "LeakyRelu", "Gelu", "MsGelu"
  std::vector<int64_t> bias_dims;  // {150}, {1, 150}, or one that must not fuse
  bool bias_first = false;
  size_t nodes_when_fused;
};

std::string MatMulChainModel(const MatMulChain& c) {
  constexpr int64_t k = 37, n = 150;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("matmul_chain");
  *g->add_node() = MakeNode("MatMul", {"a", "w"}, {"p"}, "mm");
  *g->add_node() = MakeNode(
      "Add",
      c.bias_first ? std::vector<std::string>{"bias", "p"} : std::vector<std::string>{"p", "bias"},
      {c.activation.empty() ? "y" : "s"}, "bias_add");
  if (c.activation == "Relu") {
    *g->add_node() = MakeNode("Relu", {"s"}, {"y"}, "relu");
  } else if (c.activation == "LeakyRelu") {
    auto leaky = MakeNode("LeakyRelu", {"s"}, {"y"}, "leaky");
    auto* alpha = leaky.add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(onnx::AttributeProto::FLOAT);
    alpha->set_f(0.1f);
    *g->add_node() = leaky;
  } else if (c.activation == "MsGelu") {  // onnxruntime's fused form in saved models
    auto gelu = MakeNode("Gelu", {"s"}, {"y"}, "gelu");
    gelu.set_domain("com.microsoft");
    *g->add_node() = gelu;
    auto* ms = m.add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
  } else if (c.activation == "Gelu") {
    *g->add_node() = MakeNode("Div", {"s", "sqrt2"}, {"d"}, "div");
    *g->add_node() = MakeNode("Erf", {"d"}, {"e"}, "erf");
    *g->add_node() = MakeNode("Add", {"e", "one"}, {"e1"}, "add1");
    *g->add_node() = MakeNode("Mul", {"s", "e1"}, {"ms"}, "muls");
    *g->add_node() = MakeNode("Mul", {"ms", "half"}, {"y"}, "half");
    *g->add_initializer() = nxrt::test::MakeFloatTensor("sqrt2", {}, {1.41421356f});
    *g->add_initializer() = nxrt::test::MakeFloatTensor("one", {}, {1.0f});
    *g->add_initializer() = nxrt::test::MakeFloatTensor("half", {}, {0.5f});
  }
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> w(static_cast<size_t>(k * n));
  for (float& v : w) v = normal(rng) * 0.2f;
  int64_t bias_count = 1;
  for (int64_t d : c.bias_dims) bias_count *= d;
  std::vector<float> bias(static_cast<size_t>(bias_count));
  for (float& v : bias) v = normal(rng);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {k, n}, w);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("bias", c.bias_dims, bias);
  auto* a = g->add_input();
  a->set_name("a");
  auto* at = a->mutable_type()->mutable_tensor_type();
  at->set_elem_type(onnx::TensorProto::FLOAT);
  at->mutable_shape()->add_dim()->set_dim_param("rows");
  at->mutable_shape()->add_dim()->set_dim_value(k);
  auto* y = g->add_output();  // no shape: a bias of higher rank makes it [1, rows, N]
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m.SerializeAsString();
}

TEST(GraphFusion, MatMulBiasActivationBecomesOneNode) {
  const MatMulChain cases[] = {
      {"", {150}, false, 1},
      {"Relu", {150}, true, 1},
      {"LeakyRelu", {1, 150}, false, 1},
      {"Gelu", {150}, false, 1},
      {"MsGelu", {1, 150}, true, 1},
      {"Relu", {1}, false, 3},          // one value for all columns: not a
                                        // bias per column
      {"Relu", {1, 1, 150}, false, 3},  // would raise the product's rank
  };
  for (const MatMulChain& c : cases) {
    std::string bias_text;
    for (int64_t d : c.bias_dims) bias_text += std::to_string(d) + " ";
    SCOPED_TRACE("activation '" + c.activation + "', bias " + bias_text +
                 (c.bias_first ? "first" : "second"));
    const std::string bytes = MatMulChainModel(c);
    const size_t unfused = c.activation.empty() ? 2 : c.activation == "Gelu" ? 7 : 3;
    // Gelu without a fusable bias still becomes one com.nxrt Gelu node.
    const size_t expected = c.nodes_when_fused == 1 ? 1 : (c.activation == "Gelu" ? 3 : unfused);
    std::mt19937 rng(5);
    for (int64_t rows : {1, 7, 64, 130}) {
      SCOPED_TRACE(std::to_string(rows) + " rows");
      nxrt::Value a = RandomFloats({rows, 37}, rng);
      ExpectFusionKeepsOutputs(bytes, unfused, expected, {"a"}, {&a});
    }
  }
}

// Attention written out: [Q -> Div(c) ->] MatMul(Q, Kt) [-> Div/Mul(c)] [-> Add(mask)] -> Softmax
// -> MatMul(., V), over inputs q, kt, v (and mask when given), all graph inputs.
struct AttentionChain {
  std::string name;
  std::vector<int64_t> q, kt, v, mask;  // mask empty: none
  bool scale_q = false;                 // Div on Q (torch) instead of on the scores (BERT)
  bool scale_first = false;             // scores scaled as Mul(c, scores), mask as Add(mask, s)
  int64_t softmax_axis = -1;
  bool scores_escape = false;  // the scores are also a graph output: no fusion
  bool fuses = true;
};

std::string AttentionChainModel(const AttentionChain& c) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("attention_chain");
  std::string q = "q", s = "qk";
  if (c.scale_q) {
    *g->add_node() = MakeNode("Div", {"q", "c"}, {"qs"}, "scale_q");
    q = "qs";
  }
  *g->add_node() = MakeNode("MatMul", {q, "kt"}, {"qk"}, "qk");
  if (!c.scale_q) {
    *g->add_node() = c.scale_first ? MakeNode("Mul", {"inv_c", "qk"}, {"scaled"}, "scale")
                                   : MakeNode("Div", {"qk", "c"}, {"scaled"}, "scale");
    s = "scaled";
  }
  if (!c.mask.empty()) {
    *g->add_node() = MakeNode(
        "Add",
        c.scale_first ? std::vector<std::string>{"mask", s} : std::vector<std::string>{s, "mask"},
        {"masked"}, "mask_add");
    s = "masked";
  }
  auto softmax = MakeNode("Softmax", {s}, {"p"}, "softmax");
  AddIntAttribute(&softmax, "axis", c.softmax_axis);
  *g->add_node() = softmax;
  *g->add_node() = MakeNode("MatMul", {"p", "v"}, {"y"}, "pv");
  *g->add_initializer() = nxrt::test::MakeFloatTensor("c", {}, {2.5f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("inv_c", {1}, {0.4f});
  AddFloatValue(g->add_input(), "q", c.q);
  AddFloatValue(g->add_input(), "kt", c.kt);
  AddFloatValue(g->add_input(), "v", c.v);
  if (!c.mask.empty()) AddFloatValue(g->add_input(), "mask", c.mask);
  AddFloatOutput(g, "y");
  if (c.scores_escape) AddFloatOutput(g, "qk");
  return m.SerializeAsString();
}

TEST(GraphFusion, AttentionChainBecomesOneNode) {
  const AttentionChain cases[] = {
      {"bert: scores scaled, padding mask",
       {2, 3, 20, 16},
       {2, 3, 16, 20},
       {2, 3, 20, 16},
       {2, 1, 1, 20}},
      {"torch: Q scaled, no mask", {6, 33, 8}, {6, 8, 33}, {6, 33, 24}, {}, true},
      {"Mul(c, scores), Add(mask, scores), odd sizes",
       {1, 2, 7, 5},
       {1, 2, 5, 19},
       {1, 2, 19, 3},
       {7, 19},
       false,
       true},
      {"broadcast batch dims and a scalar-column mask",
       {2, 3, 9, 4},
       {1, 3, 4, 11},
       {2, 1, 11, 17},
       {2, 3, 9, 1}},
      {"one query row, long keys", {1, 4, 1, 64}, {1, 4, 64, 300}, {1, 4, 300, 64}, {1, 1, 1, 300}},
      {"many rows per head (several blocks)", {1, 1, 700, 32}, {1, 1, 32, 40}, {1, 1, 40, 32}, {}},
      {"softmax over another axis",
       {1, 2, 6, 4},
       {1, 2, 4, 6},
       {1, 2, 6, 4},
       {},
       false,
       false,
       2,
       false,
       false},
      {"scores also a graph output",
       {1, 2, 6, 4},
       {1, 2, 4, 6},
       {1, 2, 6, 4},
       {},
       false,
       false,
       -1,
       true,
       false},
  };
  for (const AttentionChain& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t unfused = 4 + (c.mask.empty() ? 0 : 1);
    std::mt19937 rng(3);
    nxrt::Value q = RandomFloats(c.q, rng), kt = RandomFloats(c.kt, rng),
                v = RandomFloats(c.v, rng);
    std::vector<std::string> names = {"q", "kt", "v"};
    std::vector<const nxrt::Value*> inputs = {&q, &kt, &v};
    nxrt::Value mask;
    if (!c.mask.empty()) {
      mask = RandomFloats(c.mask, rng);
      // Masked positions as exporters write them, and one row masked whole (NaN both ways).
      for (size_t i = 0; i < mask.size(); ++i)
        if (mask.data<float>()[i] > 1.0f) mask.data<float>()[i] = -10000.0f;
      if (c.mask.size() == 2)
        for (int64_t j = 0; j < c.mask[1]; ++j)
          mask.data<float>()[j] = -std::numeric_limits<float>::infinity();
      names.push_back("mask");
      inputs.push_back(&mask);
    }
    ExpectFusionKeepsOutputs(AttentionChainModel(c), unfused, c.fuses ? 1 : unfused, names, inputs);
  }
}

// LayerNormalization written out over x: mean, centre, square, mean, + epsilon, sqrt, divide,
// scale [, shift].
struct LayerNormChain {
  std::string name;
  int opset = 17;
  std::vector<int64_t> x, axes, gamma;
  bool pow = true;         // Pow(d, 2), else Mul(d, d)
  bool divide = true;      // Div(d, std), else Reciprocal(std) -> Mul(d, .)
  bool beta = true;        // a shift after the scale
  bool d_escapes = false;  // the centred x is also a graph output
  bool fuses = true;
};

std::string LayerNormChainModel(const LayerNormChain& c) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(c.opset);
  auto* g = m.mutable_graph();
  g->set_name("layer_norm_chain");
  auto mean = [&](const std::string& in, const std::string& out, const std::string& name) {
    if (c.opset >= 18) {
      *g->add_node() = MakeNode("ReduceMean", {in, "axes"}, {out}, name);
    } else {
      auto r = MakeNode("ReduceMean", {in}, {out}, name);
      AddIntsAttribute(&r, "axes", c.axes);
      *g->add_node() = r;
    }
  };
  mean("x", "mu", "mean");
  *g->add_node() = MakeNode("Sub", {"x", "mu"}, {"d"}, "centre");
  *g->add_node() = c.pow ? MakeNode("Pow", {"d", "two"}, {"sq"}, "square")
                         : MakeNode("Mul", {"d", "d"}, {"sq"}, "square");
  mean("sq", "var", "variance");
  *g->add_node() = MakeNode("Add", {"var", "eps"}, {"ve"}, "add_eps");
  *g->add_node() = MakeNode("Sqrt", {"ve"}, {"sd"}, "sqrt");
  if (c.divide) {
    *g->add_node() = MakeNode("Div", {"d", "sd"}, {"n"}, "divide");
  } else {
    *g->add_node() = MakeNode("Reciprocal", {"sd"}, {"inv"}, "reciprocal");
    *g->add_node() = MakeNode("Mul", {"inv", "d"}, {"n"}, "divide");
  }
  *g->add_node() = MakeNode("Mul", {"gamma", "n"}, {c.beta ? "sc" : "y"}, "scale");
  if (c.beta) *g->add_node() = MakeNode("Add", {"sc", "beta"}, {"y"}, "shift");
  std::mt19937 rng(13);
  std::normal_distribution<float> normal;
  int64_t count = 1;
  for (int64_t d : c.gamma) count *= d;
  std::vector<float> gamma(static_cast<size_t>(count)), beta(static_cast<size_t>(count));
  for (float& v : gamma) v = normal(rng);
  for (float& v : beta) v = normal(rng);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("gamma", c.gamma, gamma);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("beta", c.gamma, beta);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("two", {}, {2.0f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("eps", {}, {1e-5f});
  if (c.opset >= 18) {
    onnx::TensorProto axes;
    axes.set_name("axes");
    axes.set_data_type(onnx::TensorProto::INT64);
    axes.add_dims(static_cast<int64_t>(c.axes.size()));
    for (int64_t a : c.axes) axes.add_int64_data(a);
    *g->add_initializer() = axes;
  }
  AddFloatValue(g->add_input(), "x", c.x);
  AddFloatOutput(g, "y");
  if (c.d_escapes) AddFloatOutput(g, "d");
  return m.SerializeAsString();
}

TEST(GraphFusion, WrittenOutLayerNormBecomesOneNode) {
  const LayerNormChain cases[] = {
      {"opset 17, Pow and Div, scale and shift", 17, {2, 5, 24}, {-1}, {24}},
      {"opset 18 axes input, Mul and Reciprocal, no shift",
       18,
       {3, 40},
       {1},
       {1, 40},
       false,
       false,
       false},
      {"two trailing axes", 13, {2, 4, 6}, {-2, -1}, {4, 6}},
      {"a middle axis", 17, {2, 5, 24}, {1}, {5, 1}, true, true, true, false, false},
      {"scale of higher rank than x",
       17,
       {5, 24},
       {-1},
       {1, 1, 24},
       true,
       true,
       true,
       false,
       false},
      {"centred x also an output", 17, {5, 24}, {-1}, {24}, true, true, true, true, false},
  };
  for (const LayerNormChain& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t unfused = 8 + (c.divide ? 0 : 1) + (c.beta ? 1 : 0);
    std::mt19937 rng(17);
    nxrt::Value x = RandomFloats(c.x, rng, 3.0f, 2.0f);
    ExpectFusionKeepsOutputs(LayerNormChainModel(c), unfused, c.fuses ? 1 : unfused, {"x"}, {&x});
  }
}

}  // namespace

namespace {

// quantize_dynamic's form: x -> DynamicQuantizeLinear -> MatMulInteger(int8 W [20, 9], its zero
// point) -> Cast(float) -> Mul(., x_scale * w_scale) [-> Add(bias [9])].
std::string DynamicQuantizedMatMulModel(bool per_column, bool bias) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("dynamic_quantized_matmul");
  AddFloatValue(g->add_input(), "x", {3, 20});
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> weight(-127, 127);
  auto int8_tensor = [&](const std::string& name, const std::vector<int64_t>& dims, bool zero) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::INT8);
    int64_t count = 1;
    for (int64_t d : dims) {
      t.add_dims(d);
      count *= d;
    }
    std::string raw(static_cast<size_t>(count), '\0');
    for (char& c : raw) c = static_cast<char>(zero ? weight(rng) / 16 : weight(rng));
    t.set_raw_data(raw);
    return t;
  };
  const std::vector<int64_t> per = per_column ? std::vector<int64_t>{9} : std::vector<int64_t>{};
  *g->add_initializer() = int8_tensor("w", {20, 9}, false);
  *g->add_initializer() = int8_tensor("w_zp", per, true);
  std::vector<float> scales(per_column ? 9 : 1);
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = 0.01f + 0.003f * static_cast<float>(i);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w_scale", per, scales);
  *g->add_node() = MakeNode("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"}, "dql");
  *g->add_node() = MakeNode("MatMulInteger", {"xq", "w", "xz", "w_zp"}, {"y32"}, "mmi");
  auto cast = MakeNode("Cast", {"y32"}, {"yf"}, "cast");
  AddIntAttribute(&cast, "to", onnx::TensorProto::FLOAT);
  *g->add_node() = cast;
  *g->add_node() = MakeNode("Mul", {"xs", "w_scale"}, {"scales"}, "scales");
  *g->add_node() = MakeNode("Mul", {"yf", "scales"}, {"y"}, "scale");
  if (bias) {
    std::vector<float> b(9);
    for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * static_cast<float>(i) - 0.4f;
    *g->add_initializer() = nxrt::test::MakeFloatTensor("bias", {9}, b);
    *g->add_node() = MakeNode("Add", {"bias", "y"}, {"out"}, "bias_add");
  }
  AddFloatOutput(g, bias ? "out" : "y");
  return m.SerializeAsString();
}

// MatMulInteger -> Cast -> Mul(scales) [-> Add(bias)] becomes one MatMulIntegerToFloat (the
// DynamicQuantizeLinear and the scales' Mul stay), with the unfused graph's outputs.
TEST(GraphFusion, DynamicQuantizedMatMulBecomesMatMulIntegerToFloat) {
  const std::vector<int64_t> dims = {3, 20};
  nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  std::mt19937 rng(8);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = normal(rng);
  for (bool per_column : {false, true}) {
    for (bool bias : {false, true}) {
      SCOPED_TRACE(std::string(per_column ? "per column" : "per tensor") + (bias ? ", bias" : ""));
      const size_t unfused = bias ? 6 : 5;
      ExpectFusionKeepsOutputs(DynamicQuantizedMatMulModel(per_column, bias), unfused, 3, {"x"},
                               {&x});
    }
  }
}

}  // namespace

namespace {

// quantize_dynamic's convolution: x -> DynamicQuantizeLinear -> ConvInteger(8-bit W [M, C / g,
// k...], its zero point) -> Cast(float) -> Mul(., x_scale * w_scale) [-> Add(bias [1, M, 1...])]
// [-> Relu | Clip(0, 6)].
struct DynamicConv {
  std::vector<int64_t> x_dims, w_dims;
  int64_t group = 1;
  bool uint8_weights = false, bias = true;
  std::string activation;  // "", "Relu" or "Clip"
};

std::string DynamicQuantizedConvModel(const DynamicConv& c) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("dynamic_quantized_conv");
  AddFloatValue(g->add_input(), "x", c.x_dims);
  std::mt19937 rng(6);
  std::uniform_int_distribution<int> byte(0, 255);
  onnx::TensorProto w;
  w.set_name("w");
  w.set_data_type(c.uint8_weights ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8);
  int64_t count = 1;
  for (int64_t d : c.w_dims) {
    w.add_dims(d);
    count *= d;
  }
  std::string raw(static_cast<size_t>(count), '\0');
  for (char& b : raw) b = static_cast<char>(byte(rng));
  w.set_raw_data(raw);
  *g->add_initializer() = w;
  onnx::TensorProto w_zp;
  w_zp.set_name("w_zp");
  w_zp.set_data_type(w.data_type());
  w_zp.set_raw_data(std::string(1, static_cast<char>(c.uint8_weights ? 131 : -3)));
  *g->add_initializer() = w_zp;
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w_scale", {}, {0.0071f});
  *g->add_node() = MakeNode("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"}, "dql");
  auto conv = MakeNode("ConvInteger", {"xq", "w", "xz", "w_zp"}, {"y32"}, "conv");
  const size_t spatial = c.x_dims.size() - 2;
  AddIntsAttribute(&conv, "pads", std::vector<int64_t>(2 * spatial, 1));
  if (c.group != 1) AddIntAttribute(&conv, "group", c.group);
  *g->add_node() = conv;
  auto cast = MakeNode("Cast", {"y32"}, {"yf"}, "cast");
  AddIntAttribute(&cast, "to", onnx::TensorProto::FLOAT);
  *g->add_node() = cast;
  *g->add_node() = MakeNode("Mul", {"xs", "w_scale"}, {"scales"}, "scales");
  *g->add_node() = MakeNode("Mul", {"yf", "scales"}, {"scaled"}, "scale");
  std::string last = "scaled";
  if (c.bias) {
    const int64_t m = c.w_dims[0];
    std::vector<float> b(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i)
      b[static_cast<size_t>(i)] = 0.37f * static_cast<float>(i % 7) - 1.1f;
    std::vector<int64_t> dims(c.x_dims.size(), 1);
    dims[1] = m;
    *g->add_initializer() = nxrt::test::MakeFloatTensor("bias", dims, b);
    *g->add_node() = MakeNode("Add", {last, "bias"}, {"biased"}, "bias_add");
    last = "biased";
  }
  if (c.activation == "Relu") {
    *g->add_node() = MakeNode("Relu", {last}, {"act"}, "relu");
    last = "act";
  } else if (c.activation == "Clip") {
    *g->add_initializer() = nxrt::test::MakeFloatTensor("lo", {}, {0.0f});
    *g->add_initializer() = nxrt::test::MakeFloatTensor("hi", {}, {6.0f});
    *g->add_node() = MakeNode("Clip", {last, "lo", "hi"}, {"act"}, "clip");
    last = "act";
  }
  AddFloatOutput(g, last);
  return m.SerializeAsString();
}

// ConvInteger -> Cast -> Mul(scales) [-> Add(bias)] [-> Relu | Clip] becomes one com.nxrt
// ConvIntegerToFloat (the DynamicQuantizeLinear and the scales' Mul stay), with the unfused
// graph's outputs: dense, grouped, depthwise and 1-D convolutions, int8 and uint8 weights.
TEST(GraphFusion, DynamicQuantizedConvBecomesConvIntegerToFloat) {
  const std::vector<DynamicConv> cases{
      {{1, 8, 20, 19}, {24, 8, 3, 3}, 1, false, true, "Clip"},
      {{2, 6, 11, 13}, {10, 3, 3, 3}, 2, true, true, "Relu"},
      {{1, 16, 14, 15}, {16, 1, 3, 3}, 16, false, true, "Clip"},
      {{1, 12, 50}, {10, 12, 5}, 1, false, false, ""},
  };
  std::mt19937 rng(12);
  for (const DynamicConv& c : cases) {
    SCOPED_TRACE("group " + std::to_string(c.group) + ", " + std::to_string(c.x_dims.size() - 2) +
                 "-D, activation '" + c.activation + "'");
    nxrt::Value x = RandomFloats(c.x_dims, rng);
    const size_t unfused = 5 + (c.bias ? 1 : 0) + (c.activation.empty() ? 0 : 1);
    ExpectFusionKeepsOutputs(DynamicQuantizedConvModel(c), unfused, 3, {"x"}, {&x});
  }
}

}  // namespace

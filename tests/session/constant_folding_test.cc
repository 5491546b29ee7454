// Constant folding at session creation (src/session/constant_folding.cc): nodes whose inputs are
// all constants run once, in the main graph and in control-flow bodies (where the enclosing
// graph's initializers are constants too), and the results equal the unfolded graph's.
#include <gtest/gtest.h>

#include <cmath>
#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

#include "controlflow/cf_models.h"
#include "test_util.h"

namespace {

using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;
using nxrt::test::cf::B;
using nxrt::test::cf::F;
using nxrt::test::cf::Graph;
using nxrt::test::cf::I64;
using nxrt::test::cf::Info;
using nxrt::test::cf::Int64s;
using nxrt::test::cf::Model;
using nxrt::test::cf::WithGraph;

onnx::TensorProto Weights() { return MakeFloatTensor("w", {2, 3}, {1, 2, 3, 4, 5, 6}); }

nxrt::Session Open(nxrt::Env& env, const std::string& bytes, int level) {
  nxrt::SessionOptions o;
  o.SetOptimizationLevel(level).SetIntraOpThreads(1);
  return nxrt::Session(env, bytes.data(), bytes.size(), &o);
}

nxrt::Value Ramp(const std::vector<int64_t>& dims) {
  auto t = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  float* p = t.data<float>();
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  for (size_t i = 0; i < n; ++i) p[i] = 0.5f * static_cast<float>(i) - 1.0f;
  return t;
}

nxrt::Value Bool(bool b) {
  auto t = nxrt::Value::Tensor(NX_TYPE_BOOL, std::vector<int64_t>{});
  *t.data<bool>() = b;
  return t;
}

std::vector<float> Floats(nxrt::Value& v, size_t n) {
  const float* p = v.data<float>();
  return std::vector<float>(p, p + n);
}

// y = x + 2 * transpose(w); the transposed weights are also an output of the model.
std::string MainGraphModel() {
  auto g = Graph("main",
                 {MakeNode("Transpose", {"w"}, {"wt"}, "transpose"),
                  MakeNode("Mul", {"wt", "two"}, {"w2"}, "double"),
                  MakeNode("Add", {"x", "w2"}, {"y"}, "add")},
                 {Info("x", F, {3, 2})}, {Info("y", F, {3, 2}), Info("wt", F, {3, 2})},
                 {Weights(), MakeFloatTensor("two", {}, {2.0f})});
  return Model(g);
}

TEST(ConstantFolding, MainGraphNodesOnConstantsRunOnceAndGiveTheSameResults) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = MainGraphModel();
  nxrt::Session plain = Open(env, bytes, 0);
  nxrt::Session folded = Open(env, bytes, 1);
  EXPECT_EQ(plain.statistic("nodes.folded"), 0);
  EXPECT_EQ(folded.statistic("nodes.folded"), 2);  // Transpose and Mul; Add reads x
  auto x = Ramp({3, 2});
  auto a = plain.Run({"x"}, {&x});
  auto b = folded.Run({"x"}, {&x});
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(Floats(a[0], 6), Floats(b[0], 6));
  EXPECT_EQ(Floats(b[1], 6), (std::vector<float>{1, 4, 2, 5, 3, 6}));  // a folded graph output
  EXPECT_EQ(Floats(b[0], 6), (std::vector<float>{1, 7.5f, 4, 10.5f, 7, 13.5f}));
}

// NFNet's convolutions standardise their weights in the graph: here each weight is a constant
// times a constant. Folded before placement, the weights are constants when the CPU EP chooses
// its blocked groups, and both convolutions run as one group.
TEST(ConstantFolding, ComputedWeightsAreConstantsWhenTheEpChoosesItsGroups) {
  nxrt::Env env(NX_LOG_ERROR);
  std::vector<float> w(16 * 16 * 9);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
  auto conv = [](const std::string& x, const std::string& wv, const std::string& y) {
    auto n = MakeNode("Conv", {x, wv}, {y}, y);
    auto* a = n.add_attribute();
    a->set_name("pads");
    a->set_type(onnx::AttributeProto::INTS);
    for (int k = 0; k < 4; ++k) a->add_ints(1);
    return n;
  };
  auto g =
      Graph("main",
            {MakeNode("Mul", {"w_raw", "gain"}, {"w1"}, "standardise1"),
             MakeNode("Mul", {"w_raw", "gain2"}, {"w2"}, "standardise2"), conv("x", "w1", "c1"),
             MakeNode("Relu", {"c1"}, {"r"}, "relu"), conv("r", "w2", "y")},
            {Info("x", F, {1, 16, 8, 8})}, {Info("y", F, {1, 16, 8, 8})},
            {MakeFloatTensor("w_raw", {16, 16, 3, 3}, w), MakeFloatTensor("gain", {}, {1.5f}),
             MakeFloatTensor("gain2", {}, {0.5f})});
  const std::string bytes = Model(g);
  nxrt::Session plain = Open(env, bytes, 0);
  nxrt::Session folded = Open(env, bytes, 1);
  EXPECT_EQ(folded.statistic("nodes.folded"), 2);
  EXPECT_EQ(folded.ep_node_count(0), 1u);  // one blocked group: Conv, Relu, Conv
  auto x = Ramp({1, 16, 8, 8});
  auto a = plain.Run({"x"}, {&x});
  auto b = folded.Run({"x"}, {&x});
  const std::vector<float> ya = Floats(a[0], 1024), yb = Floats(b[0], 1024);
  for (size_t i = 0; i < ya.size(); ++i) EXPECT_NEAR(ya[i], yb[i], 1e-4f * (1 + std::abs(ya[i])));
}

// If(c): then y = x + [w[:, :1], w[:, :1]] (Slice and Concat of the main graph's `w`, read from
// inside the branch); else an inner If(not c), two scopes from `w`, whose then branch gives
// y = x + Neg(w[:, 1:]).
std::string IfModel() {
  auto then_g = Graph("then",
                      {MakeNode("Slice", {"w", "starts", "ends", "axes"}, {"s"}, "slice"),
                       MakeNode("Concat", {"s", "s"}, {"c"}, "concat"),
                       MakeNode("Add", {"x", "c"}, {"y_then"}, "add_then")},
                      {}, {Info("y_then", F, {2, 2})},
                      {Int64s("starts", {0}), Int64s("ends", {1}), Int64s("axes", {1})});
  auto concat = then_g.mutable_node(1)->add_attribute();
  concat->set_name("axis");
  concat->set_type(onnx::AttributeProto::INT);
  concat->set_i(1);
  auto inner_then =
      Graph("inner_then",
            {MakeNode("Slice", {"w", "starts2", "ends2", "axes2"}, {"s2"}, "slice_inner"),
             MakeNode("Neg", {"s2"}, {"n2"}, "neg_inner"),
             MakeNode("Add", {"x", "n2"}, {"y_inner"}, "add_inner")},
            {}, {Info("y_inner", F, {2, 2})},
            {Int64s("starts2", {1}), Int64s("ends2", {3}), Int64s("axes2", {1})});
  auto inner_else = Graph("inner_else", {MakeNode("Identity", {"x"}, {"y_id"}, "identity")}, {},
                          {Info("y_id", F, {2, 2})});
  auto else_g = Graph("else",
                      {MakeNode("Not", {"c"}, {"not_c"}, "not"),
                       WithGraph(WithGraph(MakeNode("If", {"not_c"}, {"y_else"}, "inner_if"),
                                           "then_branch", inner_then),
                                 "else_branch", inner_else)},
                      {}, {Info("y_else", F, {2, 2})});
  auto main =
      Graph("main",
            {WithGraph(WithGraph(MakeNode("If", {"c"}, {"y"}, "outer_if"), "then_branch", then_g),
                       "else_branch", else_g)},
            {Info("c", B, {}), Info("x", F, {2, 2})}, {Info("y", F, {2, 2})}, {Weights()});
  return Model(main);
}

TEST(ConstantFolding, BodiesFoldTheEnclosingGraphsConstants) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = IfModel();
  nxrt::Session plain = Open(env, bytes, 0);
  nxrt::Session folded = Open(env, bytes, 1);
  EXPECT_EQ(plain.statistic("nodes.folded"), 0);
  // Slice and Concat in the then branch; Slice and Neg in the inner If of the else branch.
  EXPECT_EQ(folded.statistic("nodes.folded"), 4);
  auto x = Ramp({2, 2});
  for (bool c : {true, false}) {
    auto cond = Bool(c);
    auto a = plain.Run({"c", "x"}, {&cond, &x});
    auto b = folded.Run({"c", "x"}, {&cond, &x});
    EXPECT_EQ(Floats(a[0], 4), Floats(b[0], 4)) << "c=" << c;
  }
  // x = [[-1, -0.5], [0, 0.5]]; w[:, :1] = [[1], [4]]; w[:, 1:] = [[2, 3], [5, 6]].
  auto yes = Bool(true), no = Bool(false);
  auto then_y = folded.Run({"c", "x"}, {&yes, &x});
  EXPECT_EQ(Floats(then_y[0], 4), (std::vector<float>{0, 0.5f, 4, 4.5f}));
  auto else_y = folded.Run({"c", "x"}, {&no, &x});
  EXPECT_EQ(Floats(else_y[0], 4), (std::vector<float>{-3, -3.5f, -5, -5.5f}));
}

// A node that fails on its constants is not folded away: the run fails as it would have,
// naming the node.
TEST(ConstantFolding, AFailingNodeIsLeftToFailAtRunTime) {
  nxrt::Env env(NX_LOG_ERROR);
  auto g = Graph("main",
                 {MakeNode("Reshape", {"w", "bad_shape"}, {"r"}, "bad_reshape"),
                  MakeNode("Add", {"x", "r"}, {"y"}, "add")},
                 {Info("x", F, {5})}, {Info("y", F, {5})}, {Weights(), Int64s("bad_shape", {5})});
  const std::string bytes = Model(g);
  std::string plain_error, folded_error;
  for (int level : {0, 1}) {
    try {
      nxrt::Session s = Open(env, bytes, level);
      EXPECT_EQ(s.statistic("nodes.folded"), 0);
      auto x = Ramp({5});
      s.Run({"x"}, {&x});
    } catch (const nxrt::Exception& e) {
      (level == 0 ? plain_error : folded_error) = e.what();
    }
  }
  EXPECT_NE(folded_error.find("bad_reshape"), std::string::npos) << folded_error;
  EXPECT_EQ(plain_error, folded_error);
}

// Sequences are not initializers: a sequence built from constants is not folded, nor what
// reads it, and the run still gives the right values.
TEST(ConstantFolding, SequenceOperatorsAreNotFolded) {
  nxrt::Env env(NX_LOG_ERROR);
  auto concat = MakeNode("ConcatFromSequence", {"seq"}, {"cat"}, "concat");
  auto* axis = concat.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  auto g = Graph("main",
                 {MakeNode("SequenceConstruct", {"w", "w"}, {"seq"}, "sequence"), concat,
                  MakeNode("Add", {"x", "cat"}, {"y"}, "add")},
                 {Info("x", F, {4, 3})}, {Info("y", F, {4, 3})}, {Weights()});
  const std::string bytes = Model(g);
  nxrt::Session s = Open(env, bytes, 1);
  EXPECT_EQ(s.statistic("nodes.folded"), 0);
  auto x = Ramp({4, 3});
  auto y = s.Run({"x"}, {&x});
  EXPECT_EQ(Floats(y[0], 12),
            (std::vector<float>{0, 1.5f, 3, 4.5f, 6, 7.5f, 3, 4.5f, 6, 7.5f, 9, 10.5f}));
}

}  // namespace

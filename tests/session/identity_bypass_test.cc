// Identity nodes are bypassed before placement (src/session/identity_bypass.h): of initializers
// (what torch.onnx writes for deduplicated weights), so convolutions whose bias comes through
// one still form a single blocked group, and of computed values (PaddlePaddle's), so they do not
// cut a group in two; the outputs are those of the unoptimised graph. An Identity whose output
// is a graph output stays.
#include <gtest/gtest.h>

#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::AddFloatValue;
using nxrt::test::AddIntsAttribute;
using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;

// x[1,16,8,8] -> Conv(w1, Identity(b)) -> Relu -> [Identity ->] Conv(w2, Identity(Identity(b)))
// -> y; with `b_is_input` the bias initializer is also a graph input, with `b_out` its first
// Identity's output is a graph output too, with `r_identity` an Identity sits between the Relu
// and the second Conv.
std::string Model(bool b_is_input, bool b_out, bool r_identity = false) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("identities");
  *g->add_node() = MakeNode("Identity", {"b"}, {"b1"}, "id1");
  *g->add_node() = MakeNode("Identity", {"b1"}, {"b2"}, "id2");
  auto c1 = MakeNode("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  AddIntsAttribute(&c1, "pads", {1, 1, 1, 1});
  *g->add_node() = c1;
  *g->add_node() = MakeNode("Relu", {"c1"}, {r_identity ? "r0" : "r"}, "relu");
  if (r_identity) *g->add_node() = MakeNode("Identity", {"r0"}, {"r"}, "id_r");
  auto c2 = MakeNode("Conv", {"r", "w2", "b2"}, {"y"}, "conv2");
  AddIntsAttribute(&c2, "pads", {1, 1, 1, 1});
  *g->add_node() = c2;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::vector<float> w1(16 * 16 * 9), w2(16 * 16 * 9), b(16);
  for (float& v : w1) v = normal(rng);
  for (float& v : w2) v = normal(rng);
  for (float& v : b) v = normal(rng);
  *g->add_initializer() = MakeFloatTensor("w1", {16, 16, 3, 3}, w1);
  *g->add_initializer() = MakeFloatTensor("w2", {16, 16, 3, 3}, w2);
  *g->add_initializer() = MakeFloatTensor("b", {16}, b);
  AddFloatValue(g->add_input(), "x", {1, 16, 8, 8});
  if (b_is_input) AddFloatValue(g->add_input(), "b", {16});
  AddFloatValue(g->add_output(), "y", {1, 16, 8, 8});
  if (b_out) AddFloatValue(g->add_output(), "b1", {16});
  return m.SerializeAsString();
}

struct Result {
  size_t nodes;
  std::vector<nxrt::Value> outputs;
};

Result RunAt(const std::string& bytes, int level) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  options.SetOptimizationLevel(level).SetIntraOpThreads(1);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  const std::vector<int64_t> dims = {1, 16, 8, 8};
  nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = normal(rng);
  Result r{session.ep_node_count(0), {}};
  r.outputs = session.Run({"x"}, {&x});
  return r;
}

void ExpectSameOutputs(const Result& a, const Result& b) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t o = 0; o < a.outputs.size(); ++o) {
    ASSERT_EQ(a.outputs[o].shape(), b.outputs[o].shape());
    for (size_t i = 0; i < a.outputs[o].size(); ++i)
      EXPECT_NEAR(a.outputs[o].data<float>()[i], b.outputs[o].data<float>()[i], 1e-4f)
          << o << " " << i;
  }
}

TEST(IdentityBypass, ConvolutionsReadingThemFormOneGroup) {
  const std::string bytes = Model(false, false);
  const Result plain = RunAt(bytes, 0), optimized = RunAt(bytes, 1);
  EXPECT_EQ(plain.nodes, 5u);
  EXPECT_EQ(optimized.nodes, 1u);  // one blocked group: Conv, Relu, Conv
  ExpectSameOutputs(plain, optimized);
}

TEST(IdentityBypass, AnIdentityOfAComputedValueDoesNotCutTheGroup) {
  const std::string bytes = Model(false, false, true);
  const Result plain = RunAt(bytes, 0), optimized = RunAt(bytes, 1);
  EXPECT_EQ(plain.nodes, 6u);
  EXPECT_EQ(optimized.nodes, 1u);  // Conv, Relu, Conv: one group again
  ExpectSameOutputs(plain, optimized);
}

// GhostNet's module: two convolutions, their outputs concatenated along channels, then sliced to
// the module's width [0, end) before the next convolution. When `end` covers all 16 channels the
// Slice keeps everything and goes (the group is whole again); a Slice that cuts stays.
std::string SliceModel(int64_t end) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("ghost");
  auto conv = [&](const std::string& x, const std::string& w, const std::string& y, int64_t c_out,
                  int64_t c_in) {
    auto n = MakeNode("Conv", {x, w}, {y}, y);
    AddIntsAttribute(&n, "pads", {1, 1, 1, 1});
    *g->add_node() = n;
    std::mt19937 rng(static_cast<unsigned>(c_out * 7 + c_in));
    std::normal_distribution<float> normal(0.0f, 0.1f);
    std::vector<float> data(static_cast<size_t>(c_out * c_in * 9));
    for (float& v : data) v = normal(rng);
    *g->add_initializer() = MakeFloatTensor(w, {c_out, c_in, 3, 3}, data);
  };
  conv("x", "wa", "a", 8, 16);
  conv("a", "wb", "b", 8, 8);
  auto cat = MakeNode("Concat", {"a", "b"}, {"ab"}, "cat");
  nxrt::test::AddIntAttribute(&cat, "axis", 1);
  *g->add_node() = cat;
  *g->add_node() = MakeNode("Slice", {"ab", "starts", "ends", "axes"}, {"s"}, "slice");
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, int64_t>>{{"starts", 0}, {"ends", end}, {"axes", 1}}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(1);
    t->add_int64_data(value);
  }
  conv("s", "wc", "y", 16, end < 16 ? end : 16);
  AddFloatValue(g->add_input(), "x", {1, 16, 8, 8});
  AddFloatValue(g->add_output(), "y", {1, 16, 8, 8});
  return m.SerializeAsString();
}

TEST(IdentityBypass, ASliceThatKeepsEverythingGoesToo) {
  for (int64_t end : {16, 1000}) {  // the axis's size, or past it
    const std::string bytes = SliceModel(end);
    const Result plain = RunAt(bytes, 0), optimized = RunAt(bytes, 1);
    EXPECT_EQ(optimized.nodes, 1u) << end;  // Conv, Conv, Concat, Conv: one group
    ExpectSameOutputs(plain, optimized);
  }
  const std::string cut = SliceModel(12);
  const Result plain = RunAt(cut, 0), optimized = RunAt(cut, 1);
  EXPECT_GT(optimized.nodes, 1u);  // the Slice stays, between two groups
  ExpectSameOutputs(plain, optimized);
}

// Conv -> Pad(pads) -> Conv: torch's F.avg_pool2d(x, 2, 2) comes out as a Pad of zeros before
// its AveragePool (GhostNetV2). A Pad that adds nothing goes; one that pads stays.
std::string PadModel(const std::vector<int64_t>& pads) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("pad");
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  for (const char* w : {"w1", "w2"}) {
    std::vector<float> data(16 * 16 * 9);
    for (float& v : data) v = normal(rng);
    *g->add_initializer() = MakeFloatTensor(w, {16, 16, 3, 3}, data);
  }
  onnx::TensorProto* p = g->add_initializer();
  p->set_name("pads");
  p->set_data_type(onnx::TensorProto::INT64);
  p->add_dims(static_cast<int64_t>(pads.size()));
  for (int64_t v : pads) p->add_int64_data(v);
  auto c1 = MakeNode("Conv", {"x", "w1"}, {"c1"}, "conv1");
  AddIntsAttribute(&c1, "pads", {1, 1, 1, 1});
  *g->add_node() = c1;
  *g->add_node() = MakeNode("Pad", {"c1", "pads"}, {"p"}, "pad");
  *g->add_node() = MakeNode("Conv", {"p", "w2"}, {"y"}, "conv2");
  AddFloatValue(g->add_input(), "x", {1, 16, 8, 8});
  auto* y = g->add_output();  // no declared shape: 6 x 6 or 8 x 8
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m.SerializeAsString();
}

TEST(IdentityBypass, APadOfZerosGoesToo) {
  const std::string bytes = PadModel({0, 0, 0, 0, 0, 0, 0, 0});
  const Result plain = RunAt(bytes, 0), optimized = RunAt(bytes, 1);
  EXPECT_EQ(optimized.nodes, 1u);  // Conv, Conv: one group
  ExpectSameOutputs(plain, optimized);
  const std::string padding = PadModel({0, 0, 1, 1, 0, 0, 1, 1});
  const Result plain2 = RunAt(padding, 0), optimized2 = RunAt(padding, 1);
  EXPECT_GT(optimized2.nodes, 1u);
  ExpectSameOutputs(plain2, optimized2);
}

TEST(IdentityBypass, GraphOutputsAndInitializersDeclaredAsInputsKeepTheirValues) {
  {  // b1 is a graph output: id1 is not bypassed (constant folding computes it at creation,
     // src/session/constant_folding.h), and b1 is still returned.
    const std::string bytes = Model(false, true);
    const Result plain = RunAt(bytes, 0), optimized = RunAt(bytes, 1);
    ASSERT_EQ(optimized.outputs.size(), 2u);
    ExpectSameOutputs(plain, optimized);
  }
  {  // b is also declared a graph input (its initializer the default): same outputs.
    const std::string bytes = Model(true, false);
    const Result plain = RunAt(bytes, 0), optimized = RunAt(bytes, 1);
    ExpectSameOutputs(plain, optimized);
  }
}

}  // namespace

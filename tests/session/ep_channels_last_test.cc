// Channels-last rewriting for EPs that prefer it (src/session/ep_channels_last.h): layout-
// sensitive nodes become their com.ms.internal.nhwc form, elementwise nodes and channel Concats
// between them stay NHWC, and transposes appear only where NCHW and NHWC values meet.
#include "session/ep_channels_last.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "model/model.h"
#include "test_util.h"

namespace {

using nxrt::test::AddFloatValue;
using nxrt::test::AddIntsAttribute;
using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;

// x[1,4,8,8] -> Conv(w) -> Relu -> MaxPool -> {Conv(w) -> Relu, Mul(2)} -> Concat(axis 1) -> y
//                                          \-> Shape -> s (an NCHW reader)
std::shared_ptr<nxrt::Model> Model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("channels_last");
  auto conv = [](const char* in, const char* out, const char* name) {
    auto n = MakeNode("Conv", {in, "w"}, {out}, name);
    AddIntsAttribute(&n, "pads", {1, 1, 1, 1});
    return n;
  };
  *g->add_node() = conv("x", "c1", "conv1");
  *g->add_node() = MakeNode("Relu", {"c1"}, {"r1"}, "relu1");
  auto pool = MakeNode("MaxPool", {"r1"}, {"p"}, "pool");
  AddIntsAttribute(&pool, "kernel_shape", {2, 2});
  AddIntsAttribute(&pool, "strides", {2, 2});
  *g->add_node() = pool;
  *g->add_node() = conv("p", "c2", "conv2");
  *g->add_node() = MakeNode("Relu", {"c2"}, {"r2"}, "relu2");
  *g->add_node() = MakeNode("Mul", {"p", "two"}, {"m"}, "scale");
  auto concat = MakeNode("Concat", {"r2", "m"}, {"y"}, "concat");
  auto* axis = concat.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  *g->add_node() = concat;
  *g->add_node() = MakeNode("Shape", {"p"}, {"s"}, "shape");
  *g->add_initializer() = MakeFloatTensor("w", {4, 4, 3, 3}, std::vector<float>(144, 0.1f));
  *g->add_initializer() = MakeFloatTensor("two", {}, {2.0f});
  AddFloatValue(g->add_input(), "x", {1, 4, 8, 8});
  AddFloatValue(g->add_output(), "y", {1, 8, 4, 4});
  auto* s = g->add_output();
  s->set_name("s");
  s->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  const std::string bytes = m.SerializeAsString();
  return nxrt::LoadModelFromBuffer(bytes.data(), bytes.size());
}

std::map<std::string, int> OpCounts(const nxrt::Graph& g) {
  std::map<std::string, int> counts;
  for (const nxrt::Node& n : g.nodes)
    ++counts[(n.domain.empty() ? "" : n.domain + ".") + n.op_type];
  return counts;
}

const nxrt::Node* Producer(const nxrt::Graph& g, const std::string& value) {
  const int v = g.FindValue(value);
  if (v < 0 || g.value(v).producer < 0) return nullptr;
  return &g.nodes[static_cast<size_t>(g.value(v).producer)];
}

TEST(EpChannelsLast, ChainsStayNhwcAndTransposesOnlyWhereLayoutsMeet) {
  auto model = Model();
  nxrt::Graph& g = *model->graph;
  const int rewritten = nxrt::RewriteChannelsLast(g, [](const nxrt::Node&) { return true; });
  EXPECT_EQ(rewritten, 3);  // two Convs and the MaxPool
  auto counts = OpCounts(g);
  EXPECT_EQ(counts["com.ms.internal.nhwc.Conv"], 2);
  EXPECT_EQ(counts["com.ms.internal.nhwc.MaxPool"], 1);
  EXPECT_EQ(counts["Conv"], 0);
  // One transpose in (x), one out before the graph output y, one for Shape's NCHW read of p.
  EXPECT_EQ(counts["Transpose"], 3);
  // Relu, Mul by a scalar and the channel Concat work on NHWC values: Concat along axis 3.
  const nxrt::Node* concat = nullptr;
  for (const nxrt::Node& n : g.nodes)
    if (n.op_type == "Concat") concat = &n;
  ASSERT_NE(concat, nullptr);
  EXPECT_EQ(concat->FindAttribute("axis")->i, 3);
  const nxrt::Node* y = Producer(g, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->op_type, "Transpose");
  EXPECT_EQ(y->FindAttribute("perm")->ints, (std::vector<int64_t>{0, 3, 1, 2}));
  const nxrt::Node* p = Producer(g, "p");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->op_type, "Transpose");  // Shape still reads p as NCHW
  // NHWC values carry permuted shapes.
  const int c1 = g.FindValue("c1_nhwc");
  ASSERT_GE(c1, 0);
  EXPECT_EQ(g.value(c1).type.dims, (std::vector<int64_t>{1, 8, 8, 4}));
}

TEST(EpChannelsLast, NodesTheEpDoesNotWantStayAsTheyAre) {
  auto model = Model();
  nxrt::Graph& g = *model->graph;
  const size_t before = g.nodes.size();
  EXPECT_EQ(nxrt::RewriteChannelsLast(g, [](const nxrt::Node&) { return false; }), 0);
  EXPECT_EQ(g.nodes.size(), before);
  EXPECT_EQ(OpCounts(g)["Transpose"], 0);
  // Only the pool: a transpose in and one back out, Convs untouched.
  auto only_pool = Model();
  nxrt::Graph& h = *only_pool->graph;
  EXPECT_EQ(
      nxrt::RewriteChannelsLast(h, [](const nxrt::Node& n) { return n.op_type == "MaxPool"; }), 1);
  auto counts = OpCounts(h);
  EXPECT_EQ(counts["Conv"], 2);
  EXPECT_EQ(counts["com.ms.internal.nhwc.MaxPool"], 1);
  // r1 in; p back out once for conv2 and Shape; the Mul by a scalar follows its NHWC input, so
  // m goes back for the Concat, whose other input is NCHW.
  EXPECT_EQ(counts["Transpose"], 3);
}

}  // namespace

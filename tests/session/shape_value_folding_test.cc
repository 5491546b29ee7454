// Shape computations of statically shaped tensors become initializers before placement
// (src/session/shape_value_folding.h): torch's Shape -> Slice -> Concat feeding a Resize leaves
// the graph and the Resize reads a constant `sizes`; values that leave the graph, and shapes
// known only at run time, keep their nodes.
#include "session/shape_value_folding.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/model.h"
#include "test_util.h"

namespace nxrt {
namespace {

using test::AddFloatValue;
using test::AddIntAttribute;
using test::MakeNode;

void Ints(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

// x -> Relu -> r; Shape(r)[0:2] ++ [12, 8] -> sizes; Resize(r, sizes) -> y. With `sizes_out` the
// sizes are a graph output too; `x_dims` may hold a symbolic dimension (-1).
std::shared_ptr<Model> Load(bool sizes_out, const std::vector<int64_t>& x_dims) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("interpolate");
  *g->add_node() = MakeNode("Relu", {"x"}, {"r"}, "relu");
  *g->add_node() = MakeNode("Shape", {"r"}, {"s"}, "shape");
  *g->add_node() = MakeNode("Slice", {"s", "zero", "two"}, {"nc"}, "slice");
  auto cat = MakeNode("Concat", {"nc", "hw"}, {"sizes"}, "concat");
  AddIntAttribute(&cat, "axis", 0);
  *g->add_node() = cat;
  auto resize = MakeNode("Resize", {"r", "", "", "sizes"}, {"y"}, "resize");
  test::AddStringAttribute(&resize, "mode", "nearest");
  *g->add_node() = resize;
  Ints(g, "zero", {0});
  Ints(g, "two", {2});
  Ints(g, "hw", {12, 8});
  auto* x = g->add_input();
  x->set_name("x");
  auto* t = x->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : x_dims) {
    if (d < 0) {
      t->mutable_shape()->add_dim()->set_dim_param("n");
    } else {
      t->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  AddFloatValue(g->add_output(), "y", {1, 4, 12, 8});
  if (sizes_out) test::AddTypedValue(g->add_output(), "sizes", onnx::TensorProto::INT64, {4});
  const std::string bytes = m.SerializeAsString();
  return LoadModelFromBuffer(bytes.data(), bytes.size(), "");
}

std::vector<std::string> OpTypes(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  return ops;
}

TEST(ShapeValueFolding, InterpolateSizesBecomeAConstant) {
  auto model = Load(false, {1, 4, 6, 4});
  Graph& g = *model->graph;
  EXPECT_EQ(FoldShapeValues(g), 3);  // Shape, Slice, Concat
  EXPECT_EQ(OpTypes(g), (std::vector<std::string>{"Relu", "Resize"}));
  const ValueDef& sizes = g.value(g.FindValue("sizes"));
  ASSERT_TRUE(sizes.initializer);
  ASSERT_EQ(sizes.initializer->type, NX_TYPE_INT64);
  const auto* v = static_cast<const int64_t*>(sizes.initializer->data);
  EXPECT_EQ(std::vector<int64_t>(v, v + sizes.initializer->count),
            (std::vector<int64_t>{1, 4, 12, 8}));
  EXPECT_EQ(g.value(g.FindValue("y")).type.dims, (std::vector<int64_t>{1, 4, 12, 8}));
  // The Slice bounds only the folded nodes read are gone.
  EXPECT_FALSE(g.value(g.FindValue("zero")).initializer);
}

TEST(ShapeValueFolding, GraphOutputsAndRunTimeShapesKeepTheirNodes) {
  {
    auto model = Load(true, {1, 4, 6, 4});
    Graph& g = *model->graph;
    EXPECT_EQ(FoldShapeValues(g), 2);  // Shape, Slice; the Concat's output leaves the graph
    EXPECT_EQ(OpTypes(g), (std::vector<std::string>{"Relu", "Concat", "Resize"}));
  }
  {
    auto model = Load(false, {-1, 4, 6, 4});
    EXPECT_EQ(FoldShapeValues(*model->graph), 0);
    EXPECT_EQ(model->graph->nodes.size(), 5u);
  }
}

}  // namespace
}  // namespace nxrt

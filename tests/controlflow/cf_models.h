// Builders for the control-flow tests' models (ONNX protos assembled by hand) and small
// input values.
#pragma once

#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace nxrt::test::cf {

using nxrt::test::MakeNode;

inline onnx::ValueInfoProto Info(const std::string& name, onnx::TensorProto::DataType type,
                                 const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);  // negative: a dimension of unknown size
  }
  return v;
}

inline onnx::GraphProto Graph(const std::string& name, const std::vector<onnx::NodeProto>& nodes,
                              const std::vector<onnx::ValueInfoProto>& inputs,
                              const std::vector<onnx::ValueInfoProto>& outputs,
                              const std::vector<onnx::TensorProto>& initializers = {}) {
  onnx::GraphProto g;
  g.set_name(name);
  for (const auto& n : nodes) *g.add_node() = n;
  for (const auto& i : inputs) *g.add_input() = i;
  for (const auto& o : outputs) *g.add_output() = o;
  for (const auto& t : initializers) *g.add_initializer() = t;
  return g;
}

inline onnx::NodeProto WithGraph(onnx::NodeProto node, const std::string& attr,
                                 const onnx::GraphProto& g) {
  auto* a = node.add_attribute();
  a->set_name(attr);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
  return node;
}

inline std::string Model(const onnx::GraphProto& g, int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  *m.mutable_graph() = g;
  return nxrt::test::Serialize(m);
}

inline onnx::TensorProto Int64Scalar(const std::string& name, int64_t v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_int64_data(v);
  return t;
}

// A 1-D int64 initializer (shapes, axes, pads, indices).
inline onnx::TensorProto Int64s(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

constexpr auto F = onnx::TensorProto::FLOAT;
constexpr auto I64 = onnx::TensorProto::INT64;
constexpr auto B = onnx::TensorProto::BOOL;

// Outer Loop over i (N times) carrying acc; its body: If (i is even) then an inner Loop that adds
// `step` (a graph input, two scopes out) twice to acc, else acc - `bias` (an outer-body value).
// So acc gains 2*step on even i and loses bias on odd i.
inline std::string NestedModel() {
  auto inner_body = Graph(
      "inner",
      {MakeNode("Identity", {"c_in"}, {"c_out"}), MakeNode("Add", {"v_in", "step"}, {"v_out"})},
      {Info("j", I64, {}), Info("c_in", B, {}), Info("v_in", F, {1})},
      {Info("c_out", B, {}), Info("v_out", F, {1})});
  auto then_g =
      Graph("then",
            {WithGraph(MakeNode("Loop", {"two", "", "acc_in"}, {"inner_out"}), "body", inner_body)},
            {}, {Info("inner_out", F, {1})}, {Int64Scalar("two", 2)});
  auto else_g =
      Graph("else", {MakeNode("Sub", {"acc_in", "bias"}, {"minus"})}, {}, {Info("minus", F, {1})});
  auto outer_body = Graph(
      "outer",
      {MakeNode("Identity", {"cond_in"}, {"cond_out"}), MakeNode("Mod", {"i", "two_i"}, {"parity"}),
       MakeNode("Equal", {"parity", "zero_i"}, {"even"}), MakeNode("Identity", {"step"}, {"bias"}),
       WithGraph(WithGraph(MakeNode("If", {"even"}, {"acc_out"}), "then_branch", then_g),
                 "else_branch", else_g)},
      {Info("i", I64, {}), Info("cond_in", B, {}), Info("acc_in", F, {1})},
      {Info("cond_out", B, {}), Info("acc_out", F, {1})},
      {Int64Scalar("two_i", 2), Int64Scalar("zero_i", 0)});
  auto main = Graph(
      "nested", {WithGraph(MakeNode("Loop", {"n", "", "acc0"}, {"acc"}), "body", outer_body)},
      {Info("n", I64, {}), Info("acc0", F, {1}), Info("step", F, {1})}, {Info("acc", F, {1})});
  return Model(main);
}

// x (`elements` floats) -> Loop n times: x = x + 1 carried (one Add per iteration), no scan
// output.
inline std::string CountingLoop(int64_t elements) {
  auto body = Graph(
      "body",
      {MakeNode("Identity", {"c_in"}, {"c_out"}), MakeNode("Add", {"x_in", "one"}, {"x_out"})},
      {Info("i", I64, {}), Info("c_in", B, {}), Info("x_in", F, {elements})},
      {Info("c_out", B, {}), Info("x_out", F, {elements})},
      {nxrt::test::MakeFloatTensor("one", {1}, {1.0f})});
  auto main = Graph("counting", {WithGraph(MakeNode("Loop", {"n", "", "x0"}, {"x"}), "body", body)},
                    {Info("n", I64, {}), Info("x0", F, {elements})}, {Info("x", F, {elements})});
  return Model(main);
}

inline nxrt::Value Scalar64(int64_t v) {
  auto t = nxrt::Value::Tensor(NX_TYPE_INT64, std::vector<int64_t>{});
  *t.data<int64_t>() = v;
  return t;
}
inline nxrt::Value Vec1(float v) {
  auto t = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{1});
  *t.data<float>() = v;
  return t;
}

}  // namespace nxrt::test::cf

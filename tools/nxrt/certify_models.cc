#include "nxrt/certify_models.h"

#include <onnx/onnx_pb.h>

#include <random>

namespace nxrt::cli::certify {
namespace {

constexpr int kOpset = 17;

void SetTensorType(onnx::ValueInfoProto* v, const std::string& name, int elem_type,
                   const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

void AddInput(onnx::GraphProto* g, const std::string& name, int elem_type,
              const std::vector<int64_t>& dims) {
  SetTensorType(g->add_input(), name, elem_type, dims);
}
void AddOutput(onnx::GraphProto* g, const std::string& name, int elem_type,
               const std::vector<int64_t>& dims) {
  SetTensorType(g->add_output(), name, elem_type, dims);
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + std::to_string(g->node_size()));
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

// Appends the chain to `g` from `from`; binary ops take `other`. Returns the last value.
std::string AppendChain(onnx::GraphProto* g, const std::vector<std::string>& ops,
                        const std::string& from, const std::string& other,
                        const std::string& prefix) {
  std::string h = from;
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string out = prefix + std::to_string(i);
    if (IsBinary(ops[i]))
      AddNode(g, ops[i], {h, other}, {out});
    else
      AddNode(g, ops[i], {h}, {out});
    h = out;
  }
  return h;
}

void AddFloatInitializer(onnx::GraphProto* g, const std::string& name,
                         const std::vector<int64_t>& dims, uint64_t seed) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) t->add_float_data(u(rng));
}

std::string Serialize(onnx::ModelProto& m) {
  m.set_ir_version(8);
  m.set_producer_name("nxrt certify");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  return m.SerializeAsString();
}

const std::vector<int64_t> kShape = {2, 3, 4, 5};
const std::vector<int64_t> kStepShape = {3, 4, 5};
constexpr int kFloat = onnx::TensorProto::FLOAT;

}  // namespace

const std::vector<std::string>& ChainOpCandidates() {
  static const std::vector<std::string> ops = {"Add",  "Mul", "Relu", "Sigmoid", "Sub",
                                               "Tanh", "Abs", "Neg",  "Exp"};
  return ops;
}

bool IsBinary(const std::string& op) { return op == "Add" || op == "Mul" || op == "Sub"; }

std::string SingleOpModel(const std::string& op) { return ChainModel({op}); }

std::string ChainModel(const std::vector<std::string>& ops) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("certify_chain");
  AddInput(g, "X", kFloat, kShape);
  AddInput(g, "Y", kFloat, kShape);
  AppendChain(g, ops, "X", "Y", "h");
  // The graph output is the last op's own output, renamed (no Identity an EP may not claim).
  g->mutable_node(g->node_size() - 1)->set_output(0, "Z");
  AddOutput(g, "Z", kFloat, kShape);
  return Serialize(m);
}

std::string IfModel(const std::vector<std::string>& ops) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("certify_if");
  AddInput(g, "cond", onnx::TensorProto::BOOL, {});
  AddInput(g, "X", kFloat, kShape);
  AddInput(g, "Y", kFloat, kShape);
  onnx::NodeProto* n = AddNode(g, "If", {"cond"}, {"Z"});
  std::vector<std::string> reversed(ops.rbegin(), ops.rend());
  for (int branch = 0; branch < 2; ++branch) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(branch == 0 ? "then_branch" : "else_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* body = a->mutable_g();
    body->set_name(branch == 0 ? "then" : "else");
    const std::string prefix = branch == 0 ? "t" : "e";
    std::string last = AppendChain(body, branch == 0 ? ops : reversed, "X", "Y", prefix);
    AddOutput(body, last, kFloat, kShape);
  }
  AddOutput(g, "Z", kFloat, kShape);
  return Serialize(m);
}

std::string LoopModel(const std::vector<std::string>& ops) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("certify_loop");
  AddInput(g, "M", onnx::TensorProto::INT64, {});
  AddInput(g, "X", kFloat, kShape);
  AddInput(g, "Y", kFloat, kShape);
  onnx::NodeProto* n = AddNode(g, "Loop", {"M", "", "X"}, {"Z", "Zs"});
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* body = a->mutable_g();
  body->set_name("loop_body");
  AddInput(body, "i", onnx::TensorProto::INT64, {});
  AddInput(body, "cond_in", onnx::TensorProto::BOOL, {});
  AddInput(body, "h_in", kFloat, kShape);
  AddNode(body, "Identity", {"cond_in"}, {"cond_out"});
  std::string last = AppendChain(body, ops, "h_in", "Y", "b");
  AddNode(body, "Identity", {last}, {"scan_out"});
  AddOutput(body, "cond_out", onnx::TensorProto::BOOL, {});
  AddOutput(body, last, kFloat, kShape);
  AddOutput(body, "scan_out", kFloat, kShape);
  AddOutput(g, "Z", kFloat, kShape);
  SetTensorType(g->add_output(), "Zs", kFloat, {});
  g->mutable_output(1)->mutable_type()->mutable_tensor_type()->clear_shape();
  return Serialize(m);
}

std::string ScanModel(const std::vector<std::string>& ops) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("certify_scan");
  AddInput(g, "S0", kFloat, kStepShape);
  AddInput(g, "X", kFloat, kShape);
  onnx::NodeProto* n = AddNode(g, "Scan", {"S0", "X"}, {"S", "Ss"});
  onnx::AttributeProto* count = n->add_attribute();
  count->set_name("num_scan_inputs");
  count->set_type(onnx::AttributeProto::INT);
  count->set_i(1);
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* body = a->mutable_g();
  body->set_name("scan_body");
  AddInput(body, "s_in", kFloat, kStepShape);
  AddInput(body, "x_i", kFloat, kStepShape);
  std::string last = AppendChain(body, ops, "s_in", "x_i", "b");
  AddNode(body, "Identity", {last}, {"scan_out"});
  AddOutput(body, last, kFloat, kStepShape);
  AddOutput(body, "scan_out", kFloat, kStepShape);
  AddOutput(g, "S", kFloat, kStepShape);
  AddOutput(g, "Ss", kFloat, kShape);
  return Serialize(m);
}

const std::vector<std::string>& WeightOpCandidates() {
  static const std::vector<std::string> ops = {"MatMul", "Gemm", "Conv"};
  return ops;
}

std::string WeightModel(const std::string& op) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("certify_" + op);
  if (op == "Conv") {
    AddInput(g, "X", kFloat, {1, 3, 8, 8});
    AddFloatInitializer(g, "W", {4, 3, 3, 3}, 11);
    AddFloatInitializer(g, "B", {4}, 12);
    onnx::NodeProto* n = AddNode(g, "Conv", {"X", "W", "B"}, {"Z"});
    onnx::AttributeProto* pads = n->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < 4; ++i) pads->add_ints(1);
    AddOutput(g, "Z", kFloat, {1, 4, 8, 8});
  } else {
    AddInput(g, "A", kFloat, {4, 16});
    AddFloatInitializer(g, "B", {16, 8}, 21);
    if (op == "Gemm") {
      AddFloatInitializer(g, "C", {8}, 22);
      AddNode(g, "Gemm", {"A", "B", "C"}, {"Z"});
    } else {
      AddNode(g, op, {"A", "B"}, {"Z"});
    }
    AddOutput(g, "Z", kFloat, {4, 8});
  }
  return Serialize(m);
}

}  // namespace nxrt::cli::certify

// Kernel lookup: opset ranges (just inside and just outside each end), type constraints with
// several allowed types, variadic constraints, and the version-2 definition fields (host
// memory types, aliases, in-place hints) as FindKernel reports them.
#include "plugins/kernel_registry.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "model/model.h"
#include "nxrt/nxrt_c_api.h"
#include "plugins/host_objects.h"
#include "test_util.h"

namespace {

using nxrt::test::MakeNode;

NxStatus* DummyCreate(void*, const NxKernelInfo*, NxKernel**) { return nullptr; }

// A model with one node `op` at `opset` whose inputs and output have element type `type`.
std::shared_ptr<nxrt::Model> OneNode(const std::string& op, int opset,
                                     onnx::TensorProto::DataType type, int inputs = 2) {
  std::vector<std::string> names = {"a", "b", "c"};
  names.resize(static_cast<size_t>(inputs));
  onnx::ModelProto m =
      nxrt::test::MakeModel({MakeNode(op, names, {"y"})}, names, {"y"}, {2}, opset);
  for (auto& vi : *m.mutable_graph()->mutable_input())
    vi.mutable_type()->mutable_tensor_type()->set_elem_type(type);
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  std::string bytes = nxrt::test::Serialize(m);
  return nxrt::LoadModelFromBuffer(bytes.data(), bytes.size());
}

struct Def {
  const char* op;
  int start, end;
  std::vector<NxElementType> types;
  std::vector<int32_t> inputs = {-1};
};

void Add(nxrt::KernelRegistry& r, const Def& d) {
  std::vector<int32_t> outputs = {0};
  NxTypeConstraint c{
      "T", d.types.data(), d.types.size(), d.inputs.data(), d.inputs.size(), outputs.data(), 1};
  NxKernelDef def{};
  def.version = NXRT_EP_API_VERSION;
  def.op_type = d.op;
  def.domain = "";
  def.since_version_start = d.start;
  def.since_version_end = d.end;
  def.type_constraints = &c;
  def.num_type_constraints = 1;
  def.create = DummyCreate;
  r.Add(def);
}

bool Finds(const nxrt::KernelRegistry& r, const std::string& op, int opset,
           onnx::TensorProto::DataType type = onnx::TensorProto::FLOAT,
           std::string* why = nullptr) {
  auto model = OneNode(op, opset, type);
  return r.Find(model->graph->nodes[0], why) != nullptr;
}

TEST(KernelRegistry, OpsetRangesAreInclusiveAtBothEnds) {
  nxrt::KernelRegistry r;
  Add(r, {"Add", 7, 12, {NX_TYPE_FLOAT}});
  Add(r, {"Add", 14, INT32_MAX, {NX_TYPE_FLOAT}});
  EXPECT_FALSE(Finds(r, "Add", 6));  // just below the first range
  EXPECT_TRUE(Finds(r, "Add", 7));   // first range, start
  EXPECT_TRUE(Finds(r, "Add", 12));  // first range, end
  std::string why;
  EXPECT_FALSE(Finds(r, "Add", 13, onnx::TensorProto::FLOAT, &why));  // the gap
  EXPECT_NE(why.find("opset 13"), std::string::npos) << why;
  EXPECT_NE(why.find("7-12"), std::string::npos) << why;
  EXPECT_TRUE(Finds(r, "Add", 14));  // open-ended range
  EXPECT_TRUE(Finds(r, "Add", 21));
  EXPECT_FALSE(Finds(r, "Sub", 14, onnx::TensorProto::FLOAT, &why));
  EXPECT_NE(why.find("no kernel for op Sub"), std::string::npos) << why;
}

TEST(KernelRegistry, TypeConstraintsAllowEveryListedTypeAndNothingElse) {
  nxrt::KernelRegistry r;
  Add(r, {"Mul", 7, INT32_MAX, {NX_TYPE_FLOAT, NX_TYPE_INT32, NX_TYPE_DOUBLE}});
  EXPECT_TRUE(Finds(r, "Mul", 14, onnx::TensorProto::FLOAT));
  EXPECT_TRUE(Finds(r, "Mul", 14, onnx::TensorProto::INT32));
  EXPECT_TRUE(Finds(r, "Mul", 14, onnx::TensorProto::DOUBLE));
  std::string why;
  EXPECT_FALSE(Finds(r, "Mul", 14, onnx::TensorProto::INT64, &why));
  EXPECT_NE(why.find("int64"), std::string::npos) << why;
  EXPECT_NE(why.find("constraint T"), std::string::npos) << why;
}

TEST(KernelRegistry, ASecondDefinitionCoversOtherTypes) {
  nxrt::KernelRegistry r;
  Add(r, {"Mul", 7, INT32_MAX, {NX_TYPE_FLOAT}});
  Add(r, {"Mul", 13, INT32_MAX, {NX_TYPE_INT8}});
  EXPECT_TRUE(Finds(r, "Mul", 13, onnx::TensorProto::INT8));
  EXPECT_FALSE(Finds(r, "Mul", 12, onnx::TensorProto::INT8));  // the int8 kernel starts at 13
  EXPECT_TRUE(Finds(r, "Mul", 12, onnx::TensorProto::FLOAT));
}

TEST(KernelRegistry, ATypeVariableBindsToOneType) {
  // float * int32 is no Mul, even though both types are allowed for T.
  nxrt::KernelRegistry r;
  Add(r, {"Mul", 7, INT32_MAX, {NX_TYPE_FLOAT, NX_TYPE_INT32}});
  auto model = OneNode("Mul", 14, onnx::TensorProto::FLOAT);
  EXPECT_NE(r.Find(model->graph->nodes[0], nullptr), nullptr);
  model->graph->value(model->graph->nodes[0].inputs[1]).type.elem_type = NX_TYPE_INT32;
  std::string why;
  EXPECT_EQ(r.Find(model->graph->nodes[0], &why), nullptr);
  EXPECT_NE(why.find("input 1 has type int32 but input 0 has float"), std::string::npos) << why;
}

// A model whose Add mixes float and int64 fails at session creation, naming node and types.
TEST(KernelRegistry, AModelWithMismatchedTypesFailsAtSessionCreation) {
  onnx::ModelProto m =
      nxrt::test::MakeModel({MakeNode("Add", {"x", "k"}, {"y"}, "add0")}, {"x"}, {"y"}, {2}, 17);
  onnx::TensorProto k;
  k.set_name("k");
  k.set_data_type(onnx::TensorProto::INT64);
  k.add_dims(2);
  k.add_int64_data(1);
  k.add_int64_data(2);
  *m.mutable_graph()->add_initializer() = k;
  const std::string bytes = nxrt::test::Serialize(m);
  NxEnv* env = nullptr;
  ASSERT_EQ(NxEnv_Create(NX_LOG_ERROR, nullptr, nullptr, &env), nullptr);
  NxSession* session = nullptr;
  NxStatus* st = NxSession_CreateFromBuffer(env, bytes.data(), bytes.size(), nullptr, &session);
  ASSERT_NE(st, nullptr);
  const std::string m1 = NxStatus_GetMessage(st);
  EXPECT_NE(m1.find("Add node 'add0'"), std::string::npos) << m1;
  EXPECT_NE(m1.find("int64"), std::string::npos) << m1;
  NxStatus_Release(st);
  EXPECT_EQ(session, nullptr);
  NxEnv_Release(env);
}

TEST(KernelRegistry, ConstraintOnOneInputOnlyChecksThatInput) {
  nxrt::KernelRegistry r;
  Add(r, {"Pow", 15, INT32_MAX, {NX_TYPE_FLOAT}, {0}});  // input 1 unconstrained
  auto model = OneNode("Pow", 15, onnx::TensorProto::FLOAT);
  model->graph->value(model->graph->nodes[0].inputs[1]).type.elem_type = NX_TYPE_INT64;
  EXPECT_NE(r.Find(model->graph->nodes[0], nullptr), nullptr);
  model->graph->value(model->graph->nodes[0].inputs[0]).type.elem_type = NX_TYPE_INT64;
  EXPECT_EQ(r.Find(model->graph->nodes[0], nullptr), nullptr);
}

TEST(KernelRegistry, FindKernelReportsMemoryTypesAliasesAndInplaceHints) {
  nxrt::KernelRegistry r;
  const NxElementType f32 = NX_TYPE_FLOAT;
  const int32_t zero = 0, one = 1;
  NxTypeConstraint c{"T", &f32, 1, &zero, 1, &zero, 1};
  const NxIoPair alias{0, 0};
  NxKernelDef def{};
  def.version = NXRT_EP_API_VERSION;
  def.op_type = "Reshape";
  def.since_version_start = 5;
  def.since_version_end = 0;  // 0 = and later
  def.type_constraints = &c;
  def.num_type_constraints = 1;
  def.create = DummyCreate;
  def.host_inputs = &one;
  def.num_host_inputs = 1;
  def.aliases = &alias;
  def.num_aliases = 1;
  r.Add(def);
  auto model = OneNode("Reshape", 14, onnx::TensorProto::FLOAT);
  model->graph->value(model->graph->nodes[0].inputs[1]).type.elem_type = NX_TYPE_INT64;
  const NxHostApi* host = nxrt::GetHostApi();
  const char* why = nullptr;
  const NxKernelDef* found = host->KernelRegistry_FindKernel(
      reinterpret_cast<const NxKernelRegistry*>(&r),
      reinterpret_cast<const NxNode*>(&model->graph->nodes[0]), &why);
  ASSERT_NE(found, nullptr) << (why ? why : "");
  EXPECT_STREQ(found->op_type, "Reshape");
  EXPECT_EQ(found->since_version_start, 5);
  EXPECT_EQ(found->since_version_end, INT32_MAX);
  ASSERT_EQ(found->num_host_inputs, 1u);
  EXPECT_EQ(found->host_inputs[0], 1);
  ASSERT_EQ(found->num_aliases, 1u);
  EXPECT_EQ(found->aliases[0].output, 0);
  EXPECT_EQ(found->num_may_inplace, 0u);
  EXPECT_EQ(found->num_type_constraints, 1u);
  EXPECT_STREQ(found->type_constraints[0].name, "T");

  auto old = OneNode("Reshape", 4, onnx::TensorProto::FLOAT);
  EXPECT_EQ(
      host->KernelRegistry_FindKernel(reinterpret_cast<const NxKernelRegistry*>(&r),
                                      reinterpret_cast<const NxNode*>(&old->graph->nodes[0]), &why),
      nullptr);
  EXPECT_NE(std::string(why).find("opset 4"), std::string::npos) << why;
}

TEST(KernelRegistry, RejectsBrokenDefinitions) {
  nxrt::KernelRegistry r;
  NxKernelDef def{};
  def.version = NXRT_EP_API_VERSION;
  def.op_type = "Relu";
  def.since_version_start = 14;
  def.since_version_end = 13;
  def.create = DummyCreate;
  EXPECT_THROW(r.Add(def), nxrt::Error);  // empty range
  def.since_version_end = 0;
  const int32_t negative = -3;
  def.host_inputs = &negative;
  def.num_host_inputs = 1;
  EXPECT_THROW(r.Add(def), nxrt::Error);
  def.host_inputs = nullptr;  // count without array
  EXPECT_THROW(r.Add(def), nxrt::Error);
  def.num_host_inputs = 0;
  def.create = nullptr;
  EXPECT_THROW(r.Add(def), nxrt::Error);
  EXPECT_EQ(r.size(), 0u);
}

}  // namespace

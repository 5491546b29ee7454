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

// ---- Version 14: the versioned lists (arrays of pointers to entries that carry a version) ----

// A float-only "T" over input 0 in the old form and an int64-only "I" over input 1 in the new one:
// the host applies both.
TEST(KernelRegistry, VersionedListsApplyTogetherWithTheOldOnes) {
  nxrt::KernelRegistry r;
  const NxElementType f32 = NX_TYPE_FLOAT, i64 = NX_TYPE_INT64;
  const int32_t zero = 0, one = 1;
  const NxTypeConstraint t{"T", &f32, 1, &zero, 1, &zero, 1};
  const NxTypeConstraint2 index{NXRT_EP_API_VERSION, "I", &i64, 1, &one, 1, nullptr, 0};
  const NxTypeConstraint2* const constraints2[] = {&index};
  const NxIoPair2 alias{NXRT_EP_API_VERSION, 0, 0};
  const NxIoPair2* const aliases2[] = {&alias};
  NxKernelDef def{};
  def.version = NXRT_EP_API_VERSION;
  def.op_type = "Reshape";
  def.since_version_start = 5;
  def.type_constraints = &t;
  def.num_type_constraints = 1;
  def.type_constraints2 = constraints2;
  def.num_type_constraints2 = 1;
  def.aliases2 = aliases2;
  def.num_aliases2 = 1;
  def.create = DummyCreate;
  r.Add(def);

  auto model = OneNode("Reshape", 14, onnx::TensorProto::FLOAT);
  nxrt::Node& node = model->graph->nodes[0];
  std::string why;
  EXPECT_EQ(r.Find(node, &why), nullptr);  // input 1 is float, the versioned "I" wants int64
  EXPECT_NE(why.find("not allowed for constraint I"), std::string::npos) << why;
  model->graph->value(node.inputs[1]).type.elem_type = NX_TYPE_INT64;
  const nxrt::KernelEntry* found = r.Find(node, &why);
  ASSERT_NE(found, nullptr) << why;
  EXPECT_EQ(found->AliasInput(0), 0);  // from aliases2
  model->graph->value(node.inputs[0]).type.elem_type = NX_TYPE_INT64;
  EXPECT_EQ(r.Find(node, &why), nullptr);  // the old-form "T" still applies
  EXPECT_NE(why.find("not allowed for constraint T"), std::string::npos) << why;

  // FindKernel hands out both forms, each holding every entry.
  model->graph->value(node.inputs[0]).type.elem_type = NX_TYPE_FLOAT;
  const char* reason = nullptr;
  const NxKernelDef* view = nxrt::GetHostApi()->KernelRegistry_FindKernel(
      reinterpret_cast<const NxKernelRegistry*>(&r), reinterpret_cast<const NxNode*>(&node),
      &reason);
  ASSERT_NE(view, nullptr) << (reason ? reason : "");
  ASSERT_EQ(view->num_type_constraints, 2u);
  ASSERT_EQ(view->num_type_constraints2, 2u);
  EXPECT_STREQ(view->type_constraints[1].name, "I");
  EXPECT_EQ(view->type_constraints2[0]->version, static_cast<uint32_t>(NXRT_EP_API_VERSION));
  EXPECT_STREQ(view->type_constraints2[0]->name, "T");
  EXPECT_STREQ(view->type_constraints2[1]->name, "I");
  ASSERT_EQ(view->num_aliases, 1u);
  ASSERT_EQ(view->num_aliases2, 1u);
  EXPECT_EQ(view->aliases2[0]->input, 0);
  EXPECT_EQ(view->num_may_inplace2, 0u);
}

TEST(KernelRegistry, VersionedListsRejectNullAndUnversionedEntries) {
  const NxElementType f32 = NX_TYPE_FLOAT;
  const int32_t zero = 0;
  NxTypeConstraint2 c{NXRT_EP_API_VERSION, "T", &f32, 1, &zero, 1, nullptr, 0};
  NxIoPair2 pair{NXRT_EP_API_VERSION, 0, 0};
  const NxTypeConstraint2* constraints[] = {&c, nullptr};
  const NxIoPair2* pairs[] = {&pair};
  auto def_with = [&](size_t num_constraints, size_t num_inplace) {
    NxKernelDef def{};
    def.version = NXRT_EP_API_VERSION;
    def.op_type = "Relu";
    def.since_version_start = 14;
    def.create = DummyCreate;
    def.type_constraints2 = constraints;
    def.num_type_constraints2 = num_constraints;
    def.may_inplace2 = pairs;
    def.num_may_inplace2 = num_inplace;
    return def;
  };
  auto message = [](nxrt::KernelRegistry& r, const NxKernelDef& def) -> std::string {
    try {
      r.Add(def);
    } catch (const nxrt::Error& e) {
      return e.what();
    }
    return "";
  };
  nxrt::KernelRegistry r;
  EXPECT_NE(message(r, def_with(2, 0)).find("entry 1 of type_constraints2 is null"),
            std::string::npos);
  c.version = 0;  // filled without a version: a v1-13 struct passed where a v14 one belongs
  EXPECT_NE(message(r, def_with(1, 0)).find("has version 0"), std::string::npos);
  c.version = NXRT_EP_API_VERSION;
  pair.input = -1;
  EXPECT_NE(message(r, def_with(1, 1)).find("negative index in may_inplace2"), std::string::npos);
  pair.input = 0;
  NxKernelDef no_array = def_with(0, 0);
  no_array.type_constraints2 = nullptr;
  no_array.num_type_constraints2 = 1;
  EXPECT_NE(message(r, no_array).find("type_constraints2 is null"), std::string::npos);
  EXPECT_EQ(r.size(), 0u);
  // A definition of version 13 has no versioned lists: whatever lies there is never read.
  NxKernelDef v13 = def_with(2, 0);
  v13.version = 13;
  EXPECT_EQ(message(r, v13), "");
  EXPECT_EQ(message(r, def_with(1, 1)), "");
  EXPECT_EQ(r.size(), 2u);
}

}  // namespace

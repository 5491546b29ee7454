// Fused groups (ABI version 6) through the ExampleCompiler EP: groups compiled as one node on a
// declared device (two tiles: one device per group), what the report says about them, groups
// the host rejects (not convex) or the EP fails to compile (they fall back), a compiled-model
// context restored from an EPContext node, and groups inside control-flow bodies.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nxrt/nxrt.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "controlflow/cf_models.h"
#include "test_util.h"

namespace {

using namespace nxrt::test::cf;
using nxrt::test::MakeFloatTensor;

std::string CompilerLib() {
  return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_example_compiler.so";
}

// An env with ExampleCompiler on the given virtual NPU tiles.
void RegisterTiles(nxrt::Env& env, const std::vector<std::string>& tiles) {
  std::vector<nxrt::VirtualDeviceRequest> requests;
  for (const std::string& t : tiles) requests.push_back({NX_DEVICE_NPU, {{"tile", t}}});
  env.RegisterEpLibrary("compiler", CompilerLib(), requests);
}

nxrt::SessionOptions CompilerFirst() {
  nxrt::SessionOptions o;
  o.AppendEp("ExampleCompiler");
  return o;
}

std::vector<std::string> Ops(const nxrt::AssignedSubgraph& sg) {
  std::vector<std::string> ops;
  for (const auto& n : sg.nodes) ops.push_back(n.op_type);
  return ops;
}

std::vector<float> RunOne(nxrt::Session& s, const std::vector<float>& x,
                          const std::vector<int64_t>& dims) {
  std::vector<float> copy = x;
  nxrt::Value in = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, copy.data(), copy.size() * 4);
  std::vector<nxrt::Value> out = s.Run({"x"}, {&in}, {"y"});
  const float* p = out[0].data<float>();
  size_t n = 1;
  for (int64_t d : out[0].shape()) n *= static_cast<size_t>(d);
  return std::vector<float>(p, p + n);
}

const std::vector<float> kX = {-1.5f, -0.5f, 0.f, 0.5f, 1.f, 2.f};

// The same model on the CPU EP alone: the reference.
std::vector<float> CpuReference(const std::string& bytes, const std::vector<int64_t>& dims) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, bytes.data(), bytes.size());
  return RunOne(s, kX, dims);
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << "element " << i;
}

// x -> Add(+1) -> Relu -> Mul(*2) -> y: one group.
std::string Chain(const std::vector<int64_t>& dims = {2, 3}) {
  return Model(
      Graph("chain",
            {MakeNode("Add", {"x", "one"}, {"a"}, "add"), MakeNode("Relu", {"a"}, {"r"}, "relu"),
             MakeNode("Mul", {"r", "two"}, {"y"}, "mul")},
            {Info("x", F, dims)}, {Info("y", F, dims)},
            {MakeFloatTensor("one", {1}, {1}), MakeFloatTensor("two", {1}, {2})}));
}

// Two groups split by Sqrt (which ExampleCompiler does not compile):
// x -> Add(+1) -> Relu -> Sqrt -> Mul(*2) -> Sigmoid -> y
std::string TwoGroups() {
  return Model(
      Graph("two_groups",
            {MakeNode("Add", {"x", "one"}, {"a"}, "add"), MakeNode("Relu", {"a"}, {"r"}, "relu"),
             MakeNode("Sqrt", {"r"}, {"s"}, "sqrt"), MakeNode("Mul", {"s", "two"}, {"m"}, "mul"),
             MakeNode("Sigmoid", {"m"}, {"y"}, "sigmoid")},
            {Info("x", F, {2, 3})}, {Info("y", F, {2, 3})},
            {MakeFloatTensor("one", {1}, {1}), MakeFloatTensor("two", {1}, {2})}));
}

TEST(FusedGroups, OneGroupIsCompiledAsOneNodeOnTheDeclaredDevice) {
  nxrt::Env env(NX_LOG_ERROR);
  RegisterTiles(env, {"t0"});
  const std::string bytes = Chain();
  nxrt::SessionOptions o = CompilerFirst();
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 1u);
  const auto& sg = r.subgraphs[0];
  EXPECT_EQ(sg.ep_name, "ExampleCompiler");
  EXPECT_EQ(sg.kind, "fused");
  EXPECT_EQ(Ops(sg), (std::vector<std::string>{"Add", "Relu", "Mul"}));
  ASSERT_EQ(sg.devices.size(), 1u);
  EXPECT_EQ(sg.devices[0].type(), NX_DEVICE_NPU);
  EXPECT_EQ(sg.devices[0].metadata("tile"), "t0");
  EXPECT_TRUE(r.fallbacks.empty());
  // The session runs one fused node instead of three.
  EXPECT_EQ(s.ep_node_count(0), 1u);
  ExpectNear(RunOne(s, kX, {2, 3}), CpuReference(bytes, {2, 3}));
}

TEST(FusedGroups, AnEpOnTwoDevicesDeclaresADevicePerGroup) {
  nxrt::Env env(NX_LOG_ERROR);
  RegisterTiles(env, {"left", "right"});
  const std::string bytes = TwoGroups();
  nxrt::SessionOptions o = CompilerFirst();
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  EXPECT_EQ(s.ep_devices(0).size(), 2u);  // created on both tiles
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 3u);
  EXPECT_EQ(r.subgraphs[0].kind, "fused");
  EXPECT_EQ(Ops(r.subgraphs[0]), (std::vector<std::string>{"Add", "Relu"}));
  ASSERT_EQ(r.subgraphs[0].devices.size(), 1u);
  EXPECT_EQ(r.subgraphs[0].devices[0].metadata("tile"), "left");
  EXPECT_EQ(r.subgraphs[1].ep_name, "CPU");
  EXPECT_EQ(r.subgraphs[1].kind, "kernels");
  EXPECT_EQ(r.subgraphs[1].devices[0].type(), NX_DEVICE_CPU);
  EXPECT_EQ(Ops(r.subgraphs[2]), (std::vector<std::string>{"Mul", "Sigmoid"}));
  ASSERT_EQ(r.subgraphs[2].devices.size(), 1u);
  EXPECT_EQ(r.subgraphs[2].devices[0].metadata("tile"), "right");
  ASSERT_EQ(r.fallbacks.size(), 1u);
  EXPECT_EQ(r.fallbacks[0].node.name, "sqrt");
  EXPECT_EQ(r.fallbacks[0].reason_name, "declined");
  ExpectNear(RunOne(s, kX, {2, 3}), CpuReference(bytes, {2, 3}));
}

// The profile names the tile each group was declared on (tiles have device ids 0x100, 0x101).
TEST(FusedGroups, TheProfileNamesEachGroupsDeclaredDevice) {
  nxrt::Env env(NX_LOG_ERROR);
  RegisterTiles(env, {"left", "right"});
  const std::string bytes = TwoGroups();
  const std::string profile = nxrt::test::TempDir() + "/fused_groups_profile.json";
  nxrt::SessionOptions o = CompilerFirst();
  o.SetProfileFile(profile);
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  RunOne(s, kX, {2, 3});
  s.EndProfiling();
  std::ifstream in(profile);
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  // Node events in run order: group on "left", Sqrt on the CPU, group on "right".
  std::vector<std::string> devices;
  for (size_t at = json.find("\"cat\":\"node\""); at != std::string::npos;
       at = json.find("\"cat\":\"node\"", at + 1)) {
    const size_t d = json.find("\"device\":\"", at) + 10;
    devices.push_back(json.substr(d, json.find('"', d) - d));
  }
  ASSERT_EQ(devices.size(), 3u) << json;
  EXPECT_EQ(devices[0], "virtual npu 256 (nxrt examples)");
  EXPECT_EQ(devices[1].rfind("cpu (", 0), 0u) << devices[1];
  EXPECT_EQ(devices[2], "virtual npu 257 (nxrt examples)");
  std::remove(profile.c_str());
}

TEST(FusedGroups, ANonConvexGroupFallsBackWhole) {
  nxrt::Env env(NX_LOG_ERROR);
  RegisterTiles(env, {"t0"});
  // {Add, Mul} is connected through `a`, but the path add -> sqrt -> mul leaves the group.
  const std::string bytes = Model(
      Graph("diamond",
            {MakeNode("Add", {"x", "one"}, {"a"}, "add"), MakeNode("Sqrt", {"a"}, {"s"}, "sqrt"),
             MakeNode("Mul", {"a", "s"}, {"y"}, "mul")},
            {Info("x", F, {2, 3})}, {Info("y", F, {2, 3})}, {MakeFloatTensor("one", {1}, {2})}));
  nxrt::SessionOptions o = CompilerFirst();
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 1u);
  EXPECT_EQ(r.subgraphs[0].ep_name, "CPU");
  ASSERT_EQ(r.fallbacks.size(), 3u);
  for (const auto& f : r.fallbacks) {
    if (f.node.name == "sqrt") continue;
    EXPECT_EQ(f.reason, NX_FALLBACK_NON_CONVEX) << f.node.name;
    EXPECT_EQ(f.reason_name, "non_convex");
    EXPECT_NE(f.detail.find("re-enters"), std::string::npos) << f.detail;
    EXPECT_EQ(f.assigned_ep, "CPU");
  }
  ExpectNear(RunOne(s, kX, {2, 3}), CpuReference(bytes, {2, 3}));
}

TEST(FusedGroups, AGroupThatFailsToCompileFallsBackWithTheEpsMessage) {
  nxrt::Env env(NX_LOG_ERROR);
  RegisterTiles(env, {"t0"});
  const std::string bytes = Chain({-1, 3});  // dynamic batch: the compiler wants static shapes
  nxrt::SessionOptions o = CompilerFirst();
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 1u);
  EXPECT_EQ(r.subgraphs[0].ep_name, "CPU");
  ASSERT_EQ(r.fallbacks.size(), 3u);
  for (const auto& f : r.fallbacks) {
    EXPECT_EQ(f.reason, NX_FALLBACK_COMPILE_FAILED);
    EXPECT_EQ(f.reason_name, "compile_failed");
    EXPECT_NE(f.detail.find("static shapes only"), std::string::npos) << f.detail;
  }
  ExpectNear(RunOne(s, kX, {2, 3}), CpuReference(Chain({2, 3}), {2, 3}));
  // A dry run compiles nothing: it reports the group as the EP claimed it.
  nxrt::AssignmentReport dry = nxrt::PlanPlacement(env, bytes.data(), bytes.size(), &o);
  ASSERT_EQ(dry.subgraphs.size(), 1u);
  EXPECT_EQ(dry.subgraphs[0].kind, "fused");
  EXPECT_TRUE(dry.fallbacks.empty());
}

// A model whose only node is an EPContext node carrying `program`, reading x (and the two
// constants the original group read) and producing y.
std::string ContextModel(const std::string& program, const std::string& source) {
  onnx::NodeProto node = MakeNode("EPContext", {"x", "one", "two"}, {"y"}, "ctx0");
  node.set_domain("com.microsoft");
  auto* a = node.add_attribute();
  a->set_name("source");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(source);
  a = node.add_attribute();
  a->set_name("ep_cache_context");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(program);
  a = node.add_attribute();
  a->set_name("embed_mode");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_version(17);
  op = m.add_opset_import();
  op->set_domain("com.microsoft");
  op->set_version(1);
  *m.mutable_graph() = Graph("ctx", {node}, {Info("x", F, {2, 3})}, {Info("y", F, {2, 3})},
                             {MakeFloatTensor("one", {1}, {1}), MakeFloatTensor("two", {1}, {2})});
  return nxrt::test::Serialize(m);
}

TEST(FusedGroups, ACompiledContextIsRestoredAndReported) {
  nxrt::Env env(NX_LOG_ERROR);
  RegisterTiles(env, {"t0"});
  const std::string chain = Chain();
  nxrt::SessionOptions o = CompilerFirst();
  std::string program;
  {
    nxrt::Session compiled(env, chain.data(), chain.size(), &o);
    void* lib = dlopen(CompilerLib().c_str(), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(lib, nullptr);
    auto last = reinterpret_cast<const char* (*)()>(dlsym(lib, "ExampleCompiler_LastProgram"));
    ASSERT_NE(last, nullptr);
    program = last();
    dlclose(lib);
  }
  ASSERT_EQ(program.rfind("nxc1;", 0), 0u) << program;
  const std::string bytes = ContextModel(program, "ExampleCompiler");
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 1u);
  EXPECT_EQ(r.subgraphs[0].ep_name, "ExampleCompiler");
  EXPECT_EQ(r.subgraphs[0].kind, "fused");
  ASSERT_EQ(r.subgraphs[0].nodes.size(), 1u);
  EXPECT_EQ(r.subgraphs[0].nodes[0].op_type, "EPContext");
  EXPECT_EQ(r.subgraphs[0].nodes[0].domain, "com.microsoft");
  EXPECT_EQ(r.subgraphs[0].nodes[0].name, "ctx0");
  ExpectNear(RunOne(s, kX, {2, 3}), CpuReference(chain, {2, 3}));

  // A damaged context cannot be restored, and no other EP runs EPContext: a clear error.
  const std::string bad =
      ContextModel("nxc1;shape=2,3;in=0;code=frobnicate:0;out=1", "ExampleCompiler");
  try {
    nxrt::Session broken(env, bad.data(), bad.size(), &o);
    FAIL() << "a damaged context must not load";
  } catch (const nxrt::Exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad instruction 'frobnicate:0'"), std::string::npos) << what;
    EXPECT_NE(what.find("EPContext"), std::string::npos) << what;
  }
  // Another EP's context is not ExampleCompiler's to claim.
  const std::string foreign = ContextModel(program, "SomeOtherEp");
  nxrt::AssignmentReport dry = nxrt::PlanPlacement(env, foreign.data(), foreign.size(), &o);
  EXPECT_TRUE(dry.subgraphs.empty());
  ASSERT_EQ(dry.fallbacks.size(), 1u);
  EXPECT_EQ(dry.fallbacks[0].assigned_ep, "");
}

TEST(FusedGroups, GroupsInsideControlFlowBodiesAreCompiledAndReported) {
  nxrt::Env env(NX_LOG_ERROR);
  RegisterTiles(env, {"t0"});
  // If(c): then y = Relu(x + 1) * 2 (one group), else y = Sqrt(x) (CPU).
  onnx::GraphProto then_g = Graph("then",
                                  {MakeNode("Add", {"x", "one"}, {"a"}, "then_add"),
                                   MakeNode("Relu", {"a"}, {"r"}, "then_relu"),
                                   MakeNode("Mul", {"r", "two"}, {"t"}, "then_mul")},
                                  {}, {Info("t", F, {2, 3})});
  onnx::GraphProto else_g = Graph(
      "else",
      {MakeNode("Abs", {"x"}, {"ax"}, "else_abs"), MakeNode("Sqrt", {"ax"}, {"e"}, "else_sqrt")},
      {}, {Info("e", F, {2, 3})});
  onnx::NodeProto if_node = MakeNode("If", {"c"}, {"y"}, "branch");
  if_node = WithGraph(WithGraph(if_node, "then_branch", then_g), "else_branch", else_g);
  const std::string bytes =
      Model(Graph("cf", {if_node}, {Info("c", B, {}), Info("x", F, {2, 3})}, {Info("y", F, {2, 3})},
                  {MakeFloatTensor("one", {1}, {1}), MakeFloatTensor("two", {1}, {2})}));
  nxrt::SessionOptions o = CompilerFirst();
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  const nxrt::AssignmentReport r = s.assignment_report();
  bool then_fused = false, else_abs_fused = false;
  for (const auto& sg : r.subgraphs) {
    if (sg.graph == "branch/then_branch") {
      then_fused = sg.kind == "fused" && sg.ep_name == "ExampleCompiler" &&
                   Ops(sg) == std::vector<std::string>{"Add", "Relu", "Mul"};
    }
    if (sg.graph == "branch/else_branch" && sg.kind == "fused")
      else_abs_fused = Ops(sg) == std::vector<std::string>{"Abs"};
  }
  std::string listing;
  for (const auto& sg : r.subgraphs) {
    listing += "\n" + sg.graph + " " + sg.ep_name + " " + sg.kind + ":";
    for (const auto& op : Ops(sg)) listing += " " + op;
  }
  EXPECT_TRUE(then_fused) << listing;
  EXPECT_TRUE(else_abs_fused) << listing;
  for (bool cond : {true, false}) {
    bool c = cond;
    std::vector<float> x = kX;
    std::vector<int64_t> dims = {2, 3};
    nxrt::Value cv = nxrt::Value::WrapTensor(NX_TYPE_BOOL, std::span<const int64_t>(), &c, 1);
    nxrt::Value xv = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, x.data(), x.size() * 4);
    std::vector<nxrt::Value> out = s.Run({"c", "x"}, {&cv, &xv}, {"y"});
    const float* y = out[0].data<float>();
    for (size_t i = 0; i < kX.size(); ++i) {
      const float want = cond ? std::max(kX[i] + 1, 0.f) * 2 : std::sqrt(std::fabs(kX[i]));
      EXPECT_NEAR(y[i], want, 1e-6f) << (cond ? "then " : "else ") << i;
    }
  }
}

}  // namespace

// The placement report: assigned subgraphs (EP, kind, hardware devices, nodes) and the reason
// for every node the preferred EP did not take, for a session and for a dry run; control-flow
// bodies included; and `nxrt partition` printing it.
#include <gtest/gtest.h>

#include <cstdio>
#include <nxrt/nxrt.hpp>
#include <string>

#include "controlflow/cf_models.h"
#include "test_util.h"

namespace {

using namespace nxrt::test::cf;

std::string SimLib() { return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_sim_device.so"; }

std::vector<std::string> Ops(const nxrt::AssignedSubgraph& sg) {
  std::vector<std::string> ops;
  for (const auto& n : sg.nodes) ops.push_back(n.op_type);
  return ops;
}

// x -> Add(+1) -> Sigmoid -> Mul(*2) -> y; SimDevice has Add and Mul, not Sigmoid.
std::string Sandwich() {
  return Model(Graph(
      "sandwich",
      {MakeNode("Add", {"x", "one"}, {"a"}, "add"), MakeNode("Sigmoid", {"a"}, {"s"}, "sigmoid"),
       MakeNode("Mul", {"s", "two"}, {"y"}, "mul")},
      {Info("x", F, {2, 3})}, {Info("y", F, {2, 3})},
      {nxrt::test::MakeFloatTensor("one", {1}, {1}),
       nxrt::test::MakeFloatTensor("two", {1}, {2})}));
}

TEST(PlacementReport, KernelEpOnlyIsOneSubgraphOnTheCpu) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = Sandwich();
  nxrt::Session s(env, bytes.data(), bytes.size());
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 1u);
  const auto& sg = r.subgraphs[0];
  EXPECT_EQ(sg.graph, "");
  EXPECT_EQ(sg.ep_name, "CPU");
  EXPECT_EQ(sg.kind, "kernels");
  ASSERT_EQ(sg.devices.size(), 1u);
  EXPECT_EQ(sg.devices[0].type(), NX_DEVICE_CPU);
  EXPECT_EQ(Ops(sg), (std::vector<std::string>{"Add", "Sigmoid", "Mul"}));
  EXPECT_EQ(sg.nodes[1].name, "sigmoid");
  EXPECT_EQ(sg.nodes[1].domain, "");
  EXPECT_TRUE(r.fallbacks.empty());
}

TEST(PlacementReport, MixedDeviceAndCpuSplitsIntoSubgraphsWithReasons) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", SimLib());
  const std::string bytes = Sandwich();
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice");
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  EXPECT_EQ(s.statistic("copies"), 4);  // x in, a out, s in, y out
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 3u);
  EXPECT_EQ(r.subgraphs[0].ep_name, "SimDevice");
  EXPECT_EQ(Ops(r.subgraphs[0]), (std::vector<std::string>{"Add"}));
  EXPECT_EQ(r.subgraphs[1].ep_name, "CPU");
  EXPECT_EQ(Ops(r.subgraphs[1]), (std::vector<std::string>{"Sigmoid"}));
  EXPECT_EQ(r.subgraphs[2].ep_name, "SimDevice");
  // SimDevice is a legacy (version 2) device EP: created by name, it has no EP device.
  EXPECT_TRUE(r.subgraphs[0].devices.empty());
  ASSERT_EQ(r.subgraphs[1].devices.size(), 1u);
  ASSERT_EQ(r.fallbacks.size(), 1u);
  const auto& f = r.fallbacks[0];
  EXPECT_EQ(f.node.name, "sigmoid");
  EXPECT_EQ(f.preferred_ep, "SimDevice");
  EXPECT_EQ(f.assigned_ep, "CPU");
  EXPECT_EQ(f.reason, NX_FALLBACK_NO_KERNEL);
  EXPECT_EQ(f.reason_name, "no_kernel");
  EXPECT_NE(f.detail.find("Sigmoid"), std::string::npos) << f.detail;
}

TEST(PlacementReport, EachFallbackReasonIsNamed) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", SimLib());
  // Add of int64 (type constraint), Relu at opset 5 (SimDevice's starts at 6: opset), MatMul
  // whose B has no known rank (SimDevice's GetCapability declines it).
  onnx::GraphProto g = Graph(
      "reasons",
      {MakeNode("Add", {"i", "i"}, {"i2"}, "int_add"), MakeNode("MatMul", {"x", "w"}, {"m"}, "mm")},
      {Info("i", I64, {2}), Info("x", F, {2, 2}), Info("w", F, {})},
      {Info("i2", I64, {2}), Info("m", F, {2, 2})});
  g.mutable_input(2)->mutable_type()->mutable_tensor_type()->clear_shape();  // rank unknown
  const std::string bytes = Model(g);
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice");
  nxrt::AssignmentReport r = nxrt::PlanPlacement(env, bytes.data(), bytes.size(), &o);
  ASSERT_EQ(r.fallbacks.size(), 2u);
  EXPECT_EQ(r.fallbacks[0].node.name, "int_add");
  EXPECT_EQ(r.fallbacks[0].reason_name, "type_constraint");
  EXPECT_NE(r.fallbacks[0].detail.find("int64"), std::string::npos) << r.fallbacks[0].detail;
  EXPECT_EQ(r.fallbacks[1].node.name, "mm");
  EXPECT_EQ(r.fallbacks[1].reason_name, "declined");

  const std::string old = Model(Graph("old", {MakeNode("Relu", {"x"}, {"y"}, "relu")},
                                      {Info("x", F, {2})}, {Info("y", F, {2})}),
                                5);
  r = nxrt::PlanPlacement(env, old.data(), old.size(), &o);
  ASSERT_EQ(r.fallbacks.size(), 1u);
  EXPECT_EQ(r.fallbacks[0].reason_name, "opset_not_covered");
}

TEST(PlacementReport, ControlFlowBodiesAreReportedWithTheirPath) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", SimLib());
  const std::string bytes = NestedModel();
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice");
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  const nxrt::AssignmentReport r = s.assignment_report();
  bool main_loop = false, inner_add = false, else_sub = false;
  for (const auto& sg : r.subgraphs) {
    if (sg.graph.empty() && Ops(sg) == std::vector<std::string>{"Loop"})
      main_loop = sg.ep_name == "SimDevice";
    for (const auto& n : sg.nodes) {
      if (n.op_type == "Add" && sg.graph.find("/then_branch/") != std::string::npos)
        inner_add = sg.ep_name == "SimDevice";
      if (n.op_type == "Sub" && sg.graph.find("/else_branch") != std::string::npos)
        else_sub = sg.ep_name == "SimDevice";
    }
  }
  EXPECT_TRUE(main_loop);
  EXPECT_TRUE(inner_add);  // Loop body -> If then_branch -> inner Loop body
  EXPECT_TRUE(else_sub);
  // Mod/Equal (int64) in the outer body fell back to the CPU EP, with their body path (an
  // unnamed node is called after its op and first output).
  bool mod = false;
  for (const auto& f : r.fallbacks)
    if (f.node.op_type == "Mod") mod = f.graph == "Loop_acc/body" && f.assigned_ep == "CPU";
  EXPECT_TRUE(mod) << [&] {
    std::string all;
    for (const auto& f : r.fallbacks)
      all += f.graph + " " + f.node.op_type + " -> " + f.assigned_ep + "\n";
    return all;
  }();
}

TEST(PlacementReport, ADryRunReportsNodesNoEpCanRun) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", SimLib());
  const std::string bytes = Sandwich();
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice");
  o.SetFallback(NX_FALLBACK_FORBID);
  EXPECT_THROW(nxrt::Session(env, bytes.data(), bytes.size(), &o), nxrt::Exception);
  const nxrt::AssignmentReport r = nxrt::PlanPlacement(env, bytes.data(), bytes.size(), &o);
  ASSERT_EQ(r.subgraphs.size(), 2u);  // Add and Mul on SimDevice; Sigmoid on nothing
  ASSERT_EQ(r.fallbacks.size(), 1u);
  EXPECT_EQ(r.fallbacks[0].assigned_ep, "");
}

TEST(PlacementReport, NxrtPartitionPrintsTheTableAndJson) {
  const std::string path = nxrt::test::WriteTempFile("partition/sandwich.onnx", Sandwich());
  const std::string cli = std::string(NXRT_TEST_EP_DIR) + "/../bin/nxrt";
  auto run = [&](const std::string& args) {
    std::string out;
    FILE* p = popen(("'" + cli + "' partition '" + path + "' " + args + " 2>&1").c_str(), "r");
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << out;
    return out;
  };
  const std::string table = run("--ep-library '" + SimLib() + "' --ep SimDevice");
  EXPECT_NE(table.find("summary: SimDevice 2 nodes in 2 subgraphs, CPU 1 nodes in 1 subgraph"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("Sigmoid 'sigmoid' -> CPU: no_kernel"), std::string::npos) << table;
  const std::string json = run("--ep-library '" + SimLib() + "' --ep SimDevice --json");
  EXPECT_NE(json.find("\"ep_name\": \"CPU\", \"kind\": \"kernels\", \"hardware_devices\": "
                      "[{\"type\": \"cpu\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"reason\": \"no_kernel\""), std::string::npos) << json;
}

}  // namespace

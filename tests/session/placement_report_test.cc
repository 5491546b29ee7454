// The placement report: assigned subgraphs (EP, kind, hardware devices, nodes) and the reason
// for every node the preferred EP did not take, for a session and for a dry run; control-flow
// bodies included; and `nxrt partition` printing it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nxrt/nxrt.hpp>
#include <set>
#include <string>
#include <tuple>

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

// ---- Report edges and copies (issue 6 item 4): node inputs/outputs, copies between memories,
// their C API, and `nxrt partition --json/--dot/--html`. ----

using Copy = std::tuple<std::string, std::string, std::string, std::string>;

std::vector<Copy> Copies(const nxrt::AssignmentReport& r) {
  std::vector<Copy> out;
  for (const auto& c : r.copies) out.emplace_back(c.graph, c.value, c.from_ep, c.to_ep);
  return out;
}

const nxrt::AssignedNode* FindNode(const nxrt::AssignmentReport& r, const std::string& name) {
  for (const auto& sg : r.subgraphs)
    for (const auto& n : sg.nodes)
      if (n.name == name) return &n;
  return nullptr;
}

using Names = std::vector<std::string>;

TEST(PlacementReportEdges, NodesListTheirInputsAndOutputs) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = Sandwich();
  nxrt::Session s(env, bytes.data(), bytes.size());
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 1u);
  const auto& nodes = r.subgraphs[0].nodes;
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].inputs, (Names{"x", "one"}));
  EXPECT_EQ(nodes[0].outputs, (Names{"a"}));
  EXPECT_EQ(nodes[1].inputs, (Names{"a"}));
  EXPECT_EQ(nodes[1].outputs, (Names{"s"}));
  EXPECT_EQ(nodes[2].inputs, (Names{"s", "two"}));
  EXPECT_EQ(nodes[2].outputs, (Names{"y"}));
  EXPECT_TRUE(r.copies.empty());  // one EP, host memory
}

TEST(PlacementReportEdges, AnOmittedOptionalInputIsAnEmptyName) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = NestedModel();  // Loop(n, "", acc0), twice
  const nxrt::AssignmentReport r = nxrt::PlanPlacement(env, bytes.data(), bytes.size());
  size_t loops = 0;
  for (const auto& sg : r.subgraphs) {
    for (const auto& n : sg.nodes) {
      if (n.op_type != "Loop") continue;
      ++loops;
      ASSERT_EQ(n.inputs.size(), 3u) << sg.graph;
      EXPECT_EQ(n.inputs[1], "") << sg.graph;
    }
  }
  EXPECT_EQ(loops, 2u);
  bool inner_add = false;
  for (const auto& sg : r.subgraphs)
    for (const auto& n : sg.nodes)
      if (n.op_type == "Add") {
        inner_add = true;
        EXPECT_EQ(n.inputs, (Names{"v_in", "step"}));  // `step`: an outer-scope value
        EXPECT_EQ(n.outputs, (Names{"v_out"}));
      }
  EXPECT_TRUE(inner_add);
}

TEST(PlacementReportCopies, EveryValueCrossingMemoriesOnceInGraphOrder) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", SimLib());
  const std::string bytes = Sandwich();
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice");
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  // Add (SimDevice) reads x and `one` from the host, Sigmoid (CPU) reads a from SimDevice, Mul
  // (SimDevice) reads s from the CPU and `two` from the host, y goes back to the host.
  const std::vector<Copy> want = {{"", "x", "", "SimDevice"},    {"", "one", "", "SimDevice"},
                                  {"", "a", "SimDevice", "CPU"}, {"", "s", "CPU", "SimDevice"},
                                  {"", "two", "", "SimDevice"},  {"", "y", "SimDevice", ""}};
  EXPECT_EQ(Copies(s.assignment_report()), want);
  EXPECT_EQ(s.statistic("copies"), 4);  // per run; `one` and `two` are uploaded at creation
  // A dry run reports the same.
  EXPECT_EQ(Copies(nxrt::PlanPlacement(env, bytes.data(), bytes.size(), &o)), want);
  const nxrt::AssignmentReport report = s.assignment_report();  // FindNode points into it
  const auto* mul = FindNode(report, "mul");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->inputs, (Names{"s", "two"}));
}

TEST(PlacementReportCopies, AValueReadTwiceOnOneEpIsCopiedOnce) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", SimLib());
  // s (CPU) is read by two SimDevice nodes: one copy.
  const std::string bytes = Model(
      Graph("fan",
            {MakeNode("Sigmoid", {"x"}, {"s"}, "sig"), MakeNode("Add", {"s", "s"}, {"d"}, "dbl"),
             MakeNode("Mul", {"s", "d"}, {"y"}, "mul")},
            {Info("x", F, {2})}, {Info("y", F, {2})}));
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice");
  const auto r = nxrt::PlanPlacement(env, bytes.data(), bytes.size(), &o);
  EXPECT_EQ(Copies(r),
            (std::vector<Copy>{{"", "s", "CPU", "SimDevice"}, {"", "y", "SimDevice", ""}}));
  const auto* dbl = FindNode(r, "dbl");
  ASSERT_NE(dbl, nullptr);
  EXPECT_EQ(dbl->inputs, (Names{"s", "s"}));
}

TEST(PlacementReportCopies, BodiesListTheirCopiesAfterTheirParentsWithTheirPath) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", SimLib());
  const std::string bytes = NestedModel();
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice");
  const auto r = nxrt::PlanPlacement(env, bytes.data(), bytes.size(), &o);
  const std::vector<Copy> copies = Copies(r);
  ASSERT_FALSE(copies.empty());
  // The main graph's first: the Loop (SimDevice) reads n and acc0 from the host, acc goes back.
  EXPECT_EQ(copies[0], (Copy{"", "n", "", "SimDevice"}));
  EXPECT_EQ(copies[1], (Copy{"", "acc0", "", "SimDevice"}));
  EXPECT_EQ(copies[2], (Copy{"", "acc", "SimDevice", ""}));
  // In the outer body, Equal fell back to the CPU; the If on SimDevice reads its output.
  EXPECT_NE(
      std::find(copies.begin(), copies.end(), Copy{"Loop_acc/body", "even", "CPU", "SimDevice"}),
      copies.end());
  // Every copy is in a graph the report has, a body's after its parent's.
  std::set<std::string> graphs;
  for (const auto& sg : r.subgraphs) graphs.insert(sg.graph);
  size_t last_main = 0, first_body = copies.size();
  for (size_t i = 0; i < copies.size(); ++i) {
    EXPECT_TRUE(graphs.count(std::get<0>(copies[i]))) << std::get<0>(copies[i]);
    if (std::get<0>(copies[i]).empty())
      last_main = i;
    else
      first_body = std::min(first_body, i);
  }
  EXPECT_LT(last_main, first_body);
}

TEST(PlacementReportCopies, CApiEdgesAndCopies) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", SimLib());
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice");
  const std::string bytes = Sandwich();
  NxAssignmentReport* r = nullptr;
  ASSERT_EQ(NxEnv_PlanPlacementFromBuffer(env.get(), bytes.data(), bytes.size(), o.get(), &r),
            nullptr);
  // Subgraph 2: Mul on SimDevice.
  ASSERT_EQ(NxAssignmentReport_GetNodeInputCount(r, 2, 0), 2u);
  EXPECT_STREQ(NxAssignmentReport_GetNodeInput(r, 2, 0, 0), "s");
  EXPECT_STREQ(NxAssignmentReport_GetNodeInput(r, 2, 0, 1), "two");
  EXPECT_EQ(NxAssignmentReport_GetNodeInput(r, 2, 0, 2), nullptr);
  ASSERT_EQ(NxAssignmentReport_GetNodeOutputCount(r, 2, 0), 1u);
  EXPECT_STREQ(NxAssignmentReport_GetNodeOutput(r, 2, 0, 0), "y");
  EXPECT_EQ(NxAssignmentReport_GetNodeInputCount(r, 2, 1), 0u);  // no such node
  EXPECT_EQ(NxAssignmentReport_GetNodeOutputCount(r, 9, 0), 0u);
  EXPECT_EQ(NxAssignmentReport_GetNodeOutput(r, 9, 0, 0), nullptr);
  ASSERT_EQ(NxAssignmentReport_GetCopyCount(r), 6u);
  const char *graph = nullptr, *value = nullptr, *from = nullptr, *to = nullptr;
  ASSERT_EQ(NxAssignmentReport_GetCopy(r, 2, &graph, &value, &from, &to), nullptr);
  EXPECT_STREQ(graph, "");
  EXPECT_STREQ(value, "a");
  EXPECT_STREQ(from, "SimDevice");
  EXPECT_STREQ(to, "CPU");
  NxStatus* st = NxAssignmentReport_GetCopy(r, 6, &graph, &value, &from, &to);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(NxStatus_GetCode(st), NX_INVALID_ARGUMENT);
  NxStatus_Release(st);
  EXPECT_EQ(NxAssignmentReport_GetCopyCount(nullptr), 0u);
  NxAssignmentReport_Release(r);
}

TEST(PlacementReportCopies, NxrtPartitionWritesJsonEdgesDotAndHtml) {
  const std::string path = nxrt::test::WriteTempFile("partition/sandwich_views.onnx", Sandwich());
  const std::string dot = path + ".dot", html = path + ".html";
  const std::string cli = std::string(NXRT_TEST_EP_DIR) + "/../bin/nxrt";
  std::string json;
  {
    FILE* p = popen(("'" + cli + "' partition '" + path + "' --ep-library '" + SimLib() +
                     "' --ep SimDevice --json --dot '" + dot + "' --html '" + html + "' 2>&1")
                        .c_str(),
                    "r");
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof(buf), p)) json.append(buf, n);
    ASSERT_EQ(pclose(p), 0) << json;
  }
  EXPECT_NE(json.find("{\"name\": \"mul\", \"domain\": \"\", \"op_type\": \"Mul\", \"inputs\": "
                      "[\"s\", \"two\"], \"outputs\": [\"y\"]}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"copies\": [\n  {\"graph\": \"\", \"value\": \"x\", \"from_ep\": \"\", "
                      "\"to_ep\": \"SimDevice\", \"from_memory\": \"Cpu (cpu 0, host-accessible "
                      "memory)\", \"to_memory\": \"SimDevice (npu 0, device memory)\"},"),
            std::string::npos)
      << json;
  // Fallback nodes keep their three keys.
  EXPECT_NE(json.find("\"node\": {\"name\": \"sigmoid\", \"domain\": \"\", \"op_type\": "
                      "\"Sigmoid\"}, \"preferred_ep\""),
            std::string::npos)
      << json;
  auto read = [](const std::string& file) {
    std::ifstream f(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  // DOT: balanced braces (outside strings), each node declared once, the copies as diamonds.
  const std::string d = read(dot);
  ASSERT_EQ(d.rfind("digraph partition {", 0), 0u) << d;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < d.size(); ++i) {
    if (in_string) {
      if (d[i] == '\\')
        ++i;
      else if (d[i] == '"')
        in_string = false;
    } else if (d[i] == '"') {
      in_string = true;
    } else if (d[i] == '{') {
      ++depth;
    } else if (d[i] == '}') {
      ASSERT_GT(depth, 0) << d;
      --depth;
    }
  }
  EXPECT_EQ(depth, 0) << d;
  EXPECT_FALSE(in_string);
  for (const char* node :
       {"n0 [label=\"add\\nAdd\"", "n1 [label=\"sigmoid\\nSigmoid\"", "n2 [label=\"mul\\nMul\""}) {
    const size_t at = d.find(node);
    EXPECT_NE(at, std::string::npos) << node << "\n" << d;
    EXPECT_EQ(d.find(node, at + 1), std::string::npos) << node;
  }
  EXPECT_EQ(d.find("n3 [label="), std::string::npos);
  EXPECT_NE(d.find("label=\"copy a\""), std::string::npos) << d;
  EXPECT_NE(d.find("subgraph cluster_s1 {"), std::string::npos) << d;
  // HTML: every node drawn, no external URL.
  const std::string h = read(html);
  for (const char* name : {"add", "sigmoid", "mul"})
    EXPECT_NE(h.find("data-name=\"" + std::string(name) + "\""), std::string::npos) << name;
  EXPECT_EQ(h.find("https://"), std::string::npos);
  EXPECT_EQ(h.find("src="), std::string::npos);
  EXPECT_NE(h.find("<svg"), std::string::npos);
  EXPECT_NE(h.find("class=\"edge copied\""), std::string::npos);
}

}  // namespace

// ---- capability going wrong: the two reasons no well-behaved EP produces ----

namespace {

std::string ProbeLib() {
  return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_test_capability_probe_ep.so";
}

// x -> Relu -> Sigmoid -> y: the probe has a kernel for Relu only.
std::string ReluSigmoid() {
  return Model(
      Graph("probe",
            {MakeNode("Relu", {"x"}, {"r"}, "relu"), MakeNode("Sigmoid", {"r"}, {"y"}, "sigmoid")},
            {Info("x", F, {4})}, {Info("y", F, {4})}));
}

TEST(PlacementReport, AFailingGetCapabilityIsAReasonForEveryNode) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("probe", ProbeLib());
  const std::string bytes = ReluSigmoid();
  nxrt::SessionOptions o;
  o.AppendEp("CapabilityProbe", {{"mode", "fail"}});
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.fallbacks.size(), 2u);
  for (const auto& f : r.fallbacks) {
    EXPECT_EQ(f.reason, NX_FALLBACK_CAPABILITY_FAILED) << f.node.name;
    EXPECT_EQ(f.reason_name, "capability_failed");
    EXPECT_NE(f.detail.find("capability probe failed on purpose"), std::string::npos) << f.detail;
    EXPECT_EQ(f.assigned_ep, "CPU");
  }
}

TEST(PlacementReport, ANodeClaimedWithoutAKernelFallsBackWithThatReason) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("probe", ProbeLib());
  const std::string bytes = ReluSigmoid();
  nxrt::SessionOptions o;
  o.AppendEp("CapabilityProbe", {{"mode", "claim_all"}});
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 2u);
  EXPECT_EQ(r.subgraphs[0].ep_name, "CapabilityProbe");
  EXPECT_EQ(Ops(r.subgraphs[0]), (std::vector<std::string>{"Relu"}));
  ASSERT_EQ(r.fallbacks.size(), 1u);
  EXPECT_EQ(r.fallbacks[0].node.name, "sigmoid");
  EXPECT_EQ(r.fallbacks[0].reason, NX_FALLBACK_CLAIMED_WITHOUT_KERNEL);
  EXPECT_EQ(r.fallbacks[0].reason_name, "claimed_without_kernel");
  EXPECT_EQ(r.fallbacks[0].assigned_ep, "CPU");
  // The session runs: Relu on the probe, Sigmoid on the CPU EP.
  std::vector<float> x = {-1, 0, 1, 2};
  std::vector<int64_t> dims = {4};
  nxrt::Value in = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, x.data(), x.size() * 4);
  std::vector<nxrt::Value> out = s.Run({"x"}, {&in}, {"y"});
  const float* y = out[0].data<float>();
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y[i], 1 / (1 + std::exp(-std::max(x[i], 0.f))), 1e-6f);
}

}  // namespace

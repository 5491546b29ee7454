// Sessions on a kernel-based onnxruntime plugin (tests' ort_kernel_test_ep.c, API level 24): its
// GetCapability looks kernels up and claims nodes one by one, nxrt's registry is built from the
// plugin's (type constraints by parameter name, CPU-memory inputs, aliases), kernels are created
// through OrtKernelInfo, pre-pack their weights (shared across sessions), run the runtime's If
// kernel, and a plugin that breaks the contract gives clear errors, never a crash.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nxrt/nxrt.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::MakeModel;
using nxrt::test::MakeNode;

constexpr const char* kEp = "OrtKernelTestEp";

std::string KernelLib() { return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_test_ort_kernel_ep.so"; }

// The plugin's process-wide counters ("created", "released", "prepacked", "shared", "computed").
int Counter(const char* which) {
  void* lib = dlopen(KernelLib().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen(KernelLib().c_str(), RTLD_NOW);
  EXPECT_NE(lib, nullptr) << dlerror();
  using Fn = int (*)(const char*);
  auto fn = reinterpret_cast<Fn>(dlsym(lib, "OrtKernelTestCounters"));
  EXPECT_NE(fn, nullptr);
  const int v = fn ? fn(which) : -1;
  dlclose(lib);
  return v;
}

template <class Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const nxrt::Exception& e) {
    return e.what();
  }
  return "";
}

// x [2,3] -> Add(b) -> Relu -> LeakyRelu(alpha 0.2) -> Transpose [3,2] -> MatMul(W [2,4]) [3,4]
// -> Reshape([2,6]) -> Exp (not the plugin's: the CPU EP runs it) -> y [2,6].
std::string ChainModel() {
  std::vector<onnx::NodeProto> nodes = {
      MakeNode("Add", {"x", "b"}, {"a"}, "add"),
      MakeNode("Relu", {"a"}, {"r"}, "relu"),
      MakeNode("LeakyRelu", {"r"}, {"l"}, "leaky"),
      MakeNode("Transpose", {"l"}, {"t"}, "transpose"),
      MakeNode("MatMul", {"t", "w"}, {"m"}, "matmul"),
      MakeNode("Reshape", {"m", "shape"}, {"s"}, "reshape"),
      MakeNode("Exp", {"s"}, {"y"}, "exp"),
  };
  onnx::AttributeProto* alpha = nodes[2].add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(0.2f);
  nxrt::test::AddIntsAttribute(&nodes[3], "perm", {1, 0});
  onnx::ModelProto m = MakeModel(nodes, {"x"}, {}, {2, 3});
  nxrt::test::AddFloatValue(m.mutable_graph()->add_output(), "y", {2, 6});
  *m.mutable_graph()->add_initializer() =
      nxrt::test::MakeFloatTensor("b", {2, 3}, {1, -1, 0.5f, -2, 3, -0.25f});
  *m.mutable_graph()->add_initializer() =
      nxrt::test::MakeFloatTensor("w", {2, 4}, {0.5f, -1, 2, 0.25f, 1.5f, 0.75f, -0.5f, 1});
  onnx::TensorProto shape;
  shape.set_name("shape");
  shape.set_data_type(onnx::TensorProto::INT64);
  shape.add_dims(2);
  shape.add_int64_data(2);
  shape.add_int64_data(6);
  *m.mutable_graph()->add_initializer() = shape;
  return nxrt::test::Serialize(m);
}

std::vector<float> RunX(nxrt::Session& s, std::vector<float> x, const std::vector<int64_t>& dims) {
  nxrt::Value in = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, x.data(), x.size() * sizeof(float));
  auto outs = s.Run({"x"}, {&in});
  const float* y = outs.at(0).data<float>();
  return std::vector<float>(y, y + outs.at(0).size());
}

// The same model on the CPU EP alone: the reference.
std::vector<float> Reference(const std::string& bytes, const std::vector<float>& x,
                             const std::vector<int64_t>& dims) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, bytes.data(), bytes.size());
  return RunX(s, x, dims);
}

// Node name -> EP that runs it, over every subgraph of the report.
std::map<std::string, std::string> Placement(const nxrt::Session& s) {
  std::map<std::string, std::string> out;
  for (const auto& sg : s.assignment_report().subgraphs)
    for (const auto& n : sg.nodes) out[n.name] = sg.ep_name;
  return out;
}

nxrt::SessionOptions PluginOptions(
    const std::vector<std::pair<std::string, std::string>>& ep_options = {},
    NxFallbackMode fallback = NX_FALLBACK_ALLOW) {
  nxrt::SessionOptions o;
  o.AppendEp(kEp, ep_options);
  o.SetFallback(fallback);
  return o;
}

const std::vector<float> kX = {0.5f, 2, -1, 3, -4, 0.25f};

TEST(OrtKernelAdapter, SingleNodesRunThePluginsKernels) {
  const std::string bytes = ChainModel();
  const std::vector<float> want = Reference(bytes, kX, {2, 3});
  const int created = Counter("created"), released = Counter("released");
  const int computed = Counter("computed");
  {
    nxrt::Env env(NX_LOG_ERROR);
    env.RegisterEpLibrary("ort_kernel_test", KernelLib());
    nxrt::SessionOptions options = PluginOptions();
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    auto placed = Placement(session);
    for (const char* n : {"add", "relu", "leaky", "transpose", "matmul", "reshape"})
      EXPECT_EQ(placed[n], kEp) << n;
    EXPECT_NE(placed["exp"], kEp);
    for (const auto& sg : session.assignment_report().subgraphs) {
      if (sg.ep_name == kEp) {
        EXPECT_EQ(sg.kind, "kernels");
      }
    }
    EXPECT_EQ(Counter("created") - created, 6);
    EXPECT_GE(Counter("prepacked"), 1);  // MatMul's W
    for (int run = 0; run < 2; ++run) {
      std::vector<float> got = RunX(session, kX, {2, 3});
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
    }
    EXPECT_EQ(Counter("computed") - computed, 12);
    // Everything the plugin called is implemented.
    EXPECT_EQ(env.statistic(std::string("ep.") + kEp + ".ort_unimplemented_calls"), 0);
  }
  // Every kernel the plugin made was released with the session.
  EXPECT_EQ(Counter("released") - released, Counter("created") - created);
}

// onnxruntime adds a schema's attribute defaults to every node, and its kernels rely on that (no
// fallback of their own): LeakyRelu without "alpha" reads 0.01 through the kernel info.
TEST(OrtKernelAdapter, SchemaDefaultsStandInForMissingAttributes) {
  onnx::ModelProto m = MakeModel({MakeNode("LeakyRelu", {"x"}, {"y"}, "leaky")}, {"x"}, {}, {2, 3});
  nxrt::test::AddFloatValue(m.mutable_graph()->add_output(), "y", {2, 3});
  const std::string bytes = nxrt::test::Serialize(m);
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("ort_kernel_test", KernelLib());
  nxrt::SessionOptions options = PluginOptions({}, NX_FALLBACK_FORBID);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  EXPECT_EQ(Placement(session)["leaky"], kEp);
  const std::vector<float> got = RunX(session, kX, {2, 3});
  ASSERT_EQ(got.size(), kX.size());
  for (size_t i = 0; i < kX.size(); ++i)
    EXPECT_FLOAT_EQ(got[i], kX[i] >= 0 ? kX[i] : 0.01f * kX[i]) << i;
}

TEST(OrtKernelAdapter, EpOptionsReachKernelInfos) {
  // scale 2: the plugin's Add and Relu multiply their results by it.
  std::vector<onnx::NodeProto> nodes = {MakeNode("Add", {"x", "b"}, {"a"}, "add"),
                                        MakeNode("Relu", {"a"}, {"y"}, "relu")};
  onnx::ModelProto m = MakeModel(nodes, {"x"}, {"y"}, {2, 3});
  *m.mutable_graph()->add_initializer() =
      nxrt::test::MakeFloatTensor("b", {2, 3}, {1, -1, 0.5f, -2, 3, -0.25f});
  const std::string bytes = nxrt::test::Serialize(m);
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("ort_kernel_test", KernelLib());
  nxrt::SessionOptions options = PluginOptions({{"scale", "2"}});
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  const float b[6] = {1, -1, 0.5f, -2, 3, -0.25f};
  std::vector<float> got = RunX(session, kX, {2, 3});
  for (int i = 0; i < 6; ++i) {
    const float a = (kX[i] + b[i]) * 2;
    EXPECT_NEAR(got[i], (a > 0 ? a : 0) * 2, 1e-5f) << i;
  }
}

TEST(OrtKernelAdapter, TypeConstraintsChooseTheKernel) {
  // int64 Add: the plugin's second Add definition. Double Add: no definition, the CPU EP.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("types");
  *g->add_node() = MakeNode("Add", {"i", "i"}, {"i2"}, "add_int64");
  *g->add_node() = MakeNode("Add", {"d", "d"}, {"d2"}, "add_double");
  nxrt::test::AddTypedValue(g->add_input(), "i", onnx::TensorProto::INT64, {4});
  nxrt::test::AddTypedValue(g->add_input(), "d", onnx::TensorProto::DOUBLE, {4});
  nxrt::test::AddTypedValue(g->add_output(), "i2", onnx::TensorProto::INT64, {4});
  nxrt::test::AddTypedValue(g->add_output(), "d2", onnx::TensorProto::DOUBLE, {4});
  const std::string bytes = nxrt::test::Serialize(m);
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("ort_kernel_test", KernelLib());
  nxrt::SessionOptions options = PluginOptions();
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  auto placed = Placement(session);
  EXPECT_EQ(placed["add_int64"], kEp);
  EXPECT_NE(placed["add_double"], kEp);
  std::vector<int64_t> i = {1, -2, 3, 40000000000};
  std::vector<double> d = {0.5, 1.5, -2.5, 3.25};
  std::vector<int64_t> dims = {4};
  nxrt::Value vi = nxrt::Value::WrapTensor(NX_TYPE_INT64, dims, i.data(), 4 * sizeof(int64_t));
  nxrt::Value vd = nxrt::Value::WrapTensor(NX_TYPE_DOUBLE, dims, d.data(), 4 * sizeof(double));
  auto outs = session.Run({"i", "d"}, {&vi, &vd});
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(outs.at(0).data<int64_t>()[k], 2 * i[k]);
    EXPECT_EQ(outs.at(1).data<double>()[k], 2 * d[k]);
  }
}

// cond ? Relu(x) : LeakyRelu(x) (alpha 0.2), then Add(x): If is the runtime's kernel, created
// through OrtEpApi::CreateIfKernel by the plugin's registry; the branches' nodes are the plugin's.
std::string IfModel() {
  auto branch = [](const std::string& name, const std::string& op) {
    onnx::GraphProto g;
    g.set_name(name);
    *g.add_node() = MakeNode(op, {"x"}, {name + "_out"}, name + "_node");
    if (op == "LeakyRelu") {
      onnx::AttributeProto* a = g.mutable_node(0)->add_attribute();
      a->set_name("alpha");
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(0.2f);
    }
    nxrt::test::AddFloatValue(g.add_output(), name + "_out", {2, 3});
    return g;
  };
  onnx::NodeProto if_node = MakeNode("If", {"cond"}, {"branch"}, "if");
  onnx::AttributeProto* then_attr = if_node.add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  *then_attr->mutable_g() = branch("then", "Relu");
  onnx::AttributeProto* else_attr = if_node.add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  *else_attr->mutable_g() = branch("else", "LeakyRelu");
  onnx::ModelProto m =
      MakeModel({if_node, MakeNode("Add", {"branch", "x"}, {"y"}, "add")}, {"x"}, {"y"}, {2, 3});
  nxrt::test::AddTypedValue(m.mutable_graph()->add_input(), "cond", onnx::TensorProto::BOOL, {});
  return nxrt::test::Serialize(m);
}

TEST(OrtKernelAdapter, IfIsTheRuntimesKernelThroughThePluginsRegistry) {
  const std::string bytes = IfModel();
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("ort_kernel_test", KernelLib());
  nxrt::SessionOptions options = PluginOptions();
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  auto placed = Placement(session);
  EXPECT_EQ(placed["if"], kEp);
  EXPECT_EQ(placed["add"], kEp);
  EXPECT_EQ(placed["then_node"], kEp);
  EXPECT_EQ(placed["else_node"], kEp);
  std::vector<float> x = kX;
  std::vector<int64_t> dims = {2, 3};
  for (bool c : {true, false}) {
    nxrt::Value vx = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, x.data(), 6 * sizeof(float));
    bool cond = c;
    nxrt::Value vc =
        nxrt::Value::WrapTensor(NX_TYPE_BOOL, std::vector<int64_t>{}, &cond, sizeof(bool));
    auto outs = session.Run({"x", "cond"}, {&vx, &vc});
    for (int i = 0; i < 6; ++i) {
      const float b = c ? (x[i] > 0 ? x[i] : 0) : (x[i] > 0 ? x[i] : 0.2f * x[i]);
      EXPECT_NEAR(outs.at(0).data<float>()[i], b + x[i], 1e-6f) << c << " " << i;
    }
  }
}

TEST(OrtKernelAdapter, PackedWeightsAreSharedAcrossSessions) {
  const std::string bytes = ChainModel();
  const std::vector<float> want = Reference(bytes, kX, {2, 3});
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("ort_kernel_test", KernelLib());
  const int prepacked = Counter("prepacked"), shared = Counter("shared");
  nxrt::SessionOptions options = PluginOptions();
  nxrt::Session first(env, bytes.data(), bytes.size(), &options);
  nxrt::Session second(env, bytes.data(), bytes.size(), &options);
  // The second session's MatMul receives the first one's packing.
  EXPECT_EQ(Counter("prepacked") - prepacked, 1);
  EXPECT_EQ(Counter("shared") - shared, 2);
  for (nxrt::Session* s : {&first, &second}) {
    std::vector<float> got = RunX(*s, kX, {2, 3});
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
  }
}

// A plugin whose EP device computes in memory of its own: nxrt allocates it with the plugin's
// OrtEpFactory::CreateAllocator, moves values in and out with its OrtDataTransferImpl, and the
// kernels find their inputs there (they fail otherwise).
TEST(OrtKernelAdapter, DeviceMemoryComesFromThePluginsAllocatorAndTransfer) {
  const std::string bytes = ChainModel();
  const std::vector<float> want = Reference(bytes, kX, {2, 3});
  const int blocks = Counter("device_blocks"), copies = Counter("copies");
  {
    nxrt::Env env(NX_LOG_ERROR);
    env.RegisterEpLibrary("ort_kernel_test.device", KernelLib());
    nxrt::SessionOptions options = PluginOptions();
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    auto placed = Placement(session);
    for (const char* n : {"add", "relu", "leaky", "transpose", "matmul", "reshape"})
      EXPECT_EQ(placed[n], kEp) << n;
    // x goes in, the Reshape's result comes out to the CPU EP's Exp.
    std::set<std::string> moved;
    for (const auto& c : session.assignment_report().copies) moved.insert(c.value);
    EXPECT_TRUE(moved.count("x")) << "x is copied into the device's memory";
    EXPECT_TRUE(moved.count("s")) << "s is copied out for the CPU EP";
    for (int run = 0; run < 2; ++run) {
      std::vector<float> got = RunX(session, kX, {2, 3});
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
    }
    EXPECT_GE(Counter("copies") - copies, 4);  // two in, two out
    EXPECT_GT(Counter("device_blocks") - blocks, 0);
  }
  // Every block of the device memory went back to the plugin with the env.
  EXPECT_EQ(Counter("device_blocks"), blocks);
}

// A stream-aware plugin: nxrt's streams on its device are the plugin's OrtSyncStreamImpls, its
// kernels find their stream through KernelContext_GetGPUComputeStream (they fail otherwise),
// copies in and out are handed the plugin's streams, and values crossing between the streams and
// the host are ordered by the plugin's notifications; every stream goes back with the session.
TEST(OrtKernelAdapter, StreamsAreThePluginsStreams) {
  const std::string bytes = ChainModel();
  const std::vector<float> want = Reference(bytes, kX, {2, 3});
  const int streams = Counter("streams"), notifications = Counter("notifications");
  const int stream_copies = Counter("stream_copies"), host_waits = Counter("host_waits");
  const int run_ends = Counter("run_ends");
  {
    nxrt::Env env(NX_LOG_ERROR);
    env.RegisterEpLibrary("ort_kernel_test.stream", KernelLib());
    nxrt::SessionOptions options = PluginOptions();
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    EXPECT_GT(Counter("streams") - streams, 0);
    bool on_stream = false;
    for (const auto& sg : session.assignment_report().subgraphs)
      on_stream |= sg.ep_name == kEp && !sg.stream.empty();
    EXPECT_TRUE(on_stream) << "the plugin's kernels are queued on a stream";
    for (int run = 0; run < 2; ++run) {
      std::vector<float> got = RunX(session, kX, {2, 3});
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
    }
    EXPECT_GE(Counter("stream_copies") - stream_copies, 4);  // x in, s out, twice
    EXPECT_GT(Counter("notifications") - notifications, 0);
    EXPECT_GT(Counter("host_waits") - host_waits, 0);
    EXPECT_GE(Counter("run_ends") - run_ends, 2);
    EXPECT_EQ(env.statistic(std::string("ep.") + kEp + ".ort_unimplemented_calls"), 0);
  }
  EXPECT_EQ(Counter("streams"), streams);
}

// ---- A plugin that breaks the contract ----------------------------------------------------------

struct Broken {
  nxrt::Env env{NX_LOG_ERROR};
  std::string bytes = ChainModel();
  std::vector<float> want = Reference(bytes, kX, {2, 3});
  explicit Broken(const std::string& registration) {
    env.RegisterEpLibrary(registration, KernelLib());
  }
  // Whether the fallbacks of a session name `text`.
  static bool Names(const nxrt::Session& s, const std::string& text) {
    for (const auto& f : s.assignment_report().fallbacks)
      if (f.detail.find(text) != std::string::npos) return true;
    return false;
  }
  void ExpectCorrect(nxrt::Session& s) {
    std::vector<float> got = RunX(s, kX, {2, 3});
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
  }
};

TEST(OrtKernelAdapter, AFailingRegistryFailsTheSessionWithItsReason) {
  Broken b("ort_kernel_test.failing_registry");
  nxrt::SessionOptions options = PluginOptions();
  std::string err =
      ErrorOf([&] { nxrt::Session s(b.env, b.bytes.data(), b.bytes.size(), &options); });
  EXPECT_NE(err.find("GetKernelRegistry failed"), std::string::npos) << err;
}

// A kernel that cannot be made fails the session with the plugin's reason, as in onnxruntime (and
// as for nxrt's own EPs: placement already chose the EP), and the env stays usable.
TEST(OrtKernelAdapter, KernelsThatCannotBeMadeFailTheSessionNamingWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ort_kernel_test.failing_create", "Relu create failed on purpose"},
      {"ort_kernel_test.null_kernel", "returned no kernel"},
      {"ort_kernel_test.no_compute", "has no Compute or no Release"},
  };
  for (const auto& [registration, reason] : cases) {
    SCOPED_TRACE(registration);
    const int created = Counter("created"), released = Counter("released");
    {
      Broken b(registration);
      nxrt::SessionOptions options = PluginOptions();
      std::string err =
          ErrorOf([&] { nxrt::Session s(b.env, b.bytes.data(), b.bytes.size(), &options); });
      EXPECT_NE(err.find(reason), std::string::npos) << err;
      EXPECT_NE(err.find("Relu node 'relu'"), std::string::npos) << err;
      // The env still serves sessions that do not use the plugin.
      nxrt::Session cpu(b.env, b.bytes.data(), b.bytes.size());
      b.ExpectCorrect(cpu);
    }
    // Kernels made before the failure were released with the failed session.
    EXPECT_EQ(Counter("released") - released, Counter("created") - created);
  }
}

TEST(OrtKernelAdapter, AFailingComputeReportsThePluginsMessage) {
  Broken b("ort_kernel_test.failing_compute");
  nxrt::SessionOptions options = PluginOptions();
  nxrt::Session s(b.env, b.bytes.data(), b.bytes.size(), &options);
  std::string err = ErrorOf([&] { RunX(s, kX, {2, 3}); });
  EXPECT_NE(err.find("Relu compute failed on purpose"), std::string::npos) << err;
  EXPECT_NE(ErrorOf([&] { RunX(s, kX, {2, 3}); }), "");  // and again: the session stays usable
}

// OrtEp::OnRunStart / OnRunEnd bracket every run (nxrt's NxEp version 15); a plugin whose
// IsConcurrentRunSupported says no never sees two runs at once, even from two threads.
TEST(OrtKernelAdapter, RunsAreBracketedAndSerialisedWhereThePluginAsks) {
  for (const char* mode : {"ort_kernel_test", "ort_kernel_test.serial_runs"}) {
    Broken b(mode);
    nxrt::SessionOptions options = PluginOptions();
    nxrt::Session s(b.env, b.bytes.data(), b.bytes.size(), &options);
    const int starts = Counter("ep_run_starts"), ends = Counter("ep_run_ends");
    b.ExpectCorrect(s);
    EXPECT_EQ(Counter("ep_run_starts") - starts, 1) << mode;
    EXPECT_EQ(Counter("ep_run_ends") - ends, 1) << mode;
    if (std::string(mode).find("serial_runs") == std::string::npos) continue;
    const int before = Counter("max_active_runs");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int r = 0; r < 5; ++r) b.ExpectCorrect(s);
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(Counter("ep_run_starts") - starts, 21);
    EXPECT_EQ(Counter("ep_run_ends") - ends, 21);
    EXPECT_EQ(Counter("active_runs"), 0);
    EXPECT_LE(Counter("max_active_runs"), std::max(before, 1)) << "two runs overlapped";
  }
}

TEST(OrtKernelAdapter, AFailingOnRunStartFailsTheRunBeforeItComputes) {
  Broken b("ort_kernel_test.failing_run_start");
  nxrt::SessionOptions options = PluginOptions();
  nxrt::Session s(b.env, b.bytes.data(), b.bytes.size(), &options);
  const int computed = Counter("computed"), ends = Counter("ep_run_ends");
  std::string err = ErrorOf([&] { RunX(s, kX, {2, 3}); });
  EXPECT_NE(err.find("OnRunStart failed on purpose"), std::string::npos) << err;
  EXPECT_EQ(Counter("computed"), computed);
  EXPECT_EQ(Counter("ep_run_ends"), ends);               // no OnRunEnd after a failed OnRunStart
  EXPECT_NE(ErrorOf([&] { RunX(s, kX, {2, 3}); }), "");  // and again: no lock is left held
}

TEST(OrtKernelAdapter, ForeignNodesAndForeignDefinitionsClaimNothing) {
  {
    // GetCapability passes a pointer that is no node: both calls fail, nothing is claimed.
    Broken b("ort_kernel_test.foreign_node");
    nxrt::SessionOptions options = PluginOptions();
    nxrt::Session s(b.env, b.bytes.data(), b.bytes.size(), &options);
    for (const auto& [node, ep] : Placement(s)) EXPECT_NE(ep, kEp) << node;
    b.ExpectCorrect(s);
  }
  {
    // Relu's definition names another EP: nxrt does not register it, Relu runs on the CPU EP.
    Broken b("ort_kernel_test.wrong_ep");
    nxrt::SessionOptions options = PluginOptions();
    nxrt::Session s(b.env, b.bytes.data(), b.bytes.size(), &options);
    EXPECT_NE(Placement(s)["relu"], kEp);
    EXPECT_EQ(Placement(s)["add"], kEp);
    b.ExpectCorrect(s);
  }
}

}  // namespace

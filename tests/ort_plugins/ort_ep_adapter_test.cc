// Sessions on an EP from a library built for onnxruntime's plugin interface (tests'
// ort_test_ep.c): its GetCapability sees nxrt's graph through the ORT graph view, its Compile
// gets the groups, its compute infos run them, EP options reach it as session config entries,
// and a plugin whose Compile or Compute fails gives clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nxrt/nxrt.hpp>
#include <utility>

#include "test_util.h"

namespace {

using nxrt::test::MakeModel;
using nxrt::test::MakeNode;

std::string OrtTestLib() { return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_test_ort_ep.so"; }

template <class Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const nxrt::Exception& e) {
    return e.what();
  }
  return "";
}

// y = Relu(x + b) * w, then Exp (which the plugin does not claim: it stays on the CPU EP);
// b and w are initializers.
std::string ModelBytes() {
  onnx::ModelProto m =
      MakeModel({MakeNode("Add", {"x", "b"}, {"s"}, "add"), MakeNode("Relu", {"s"}, {"r"}, "relu"),
                 MakeNode("Mul", {"r", "w"}, {"m"}, "mul"), MakeNode("Exp", {"m"}, {"y"}, "exp")},
                {"x"}, {"y"}, {2, 3});
  *m.mutable_graph()->add_initializer() =
      nxrt::test::MakeFloatTensor("b", {2, 3}, {1, -1, 0.5f, -2, 3, -0.25f});
  *m.mutable_graph()->add_initializer() = nxrt::test::MakeFloatTensor("w", {1}, {0.5f});
  return nxrt::test::Serialize(m);
}

std::vector<float> Expected(const float* x, float scale) {
  const float b[6] = {1, -1, 0.5f, -2, 3, -0.25f};
  std::vector<float> y(6);
  for (int i = 0; i < 6; ++i) {
    float s = (x[i] + b[i]) * scale;
    float r = (s > 0 ? s : 0) * scale;
    y[i] = std::exp(r * 0.5f * scale);
  }
  return y;
}

std::vector<float> RunModel(nxrt::Session& session, float* x) {
  std::vector<int64_t> dims = {2, 3};
  nxrt::Value in = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, x, 6 * sizeof(float));
  auto outs = session.Run({"x"}, {&in});
  const float* y = outs.at(0).data<float>();
  return std::vector<float>(y, y + 6);
}

void RunsOnThePlugin(const std::string& registration, const std::string& scale) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary(registration, OrtTestLib());
  nxrt::SessionOptions options;
  if (scale.empty())
    options.AppendEp("OrtTestEp");
  else
    options.AppendEp("OrtTestEp", {{"scale", scale}});
  std::string bytes = ModelBytes();
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  nxrt::AssignmentReport report = session.assignment_report();
  size_t fused = 0, on_cpu = 0;
  for (const auto& sg : report.subgraphs) {
    if (sg.ep_name == "OrtTestEp") {
      EXPECT_EQ(sg.kind, "fused");
      fused += sg.nodes.size();
    } else {
      on_cpu += sg.nodes.size();
    }
  }
  EXPECT_EQ(fused, 3u);   // Add, Relu, Mul
  EXPECT_EQ(on_cpu, 1u);  // Exp
  float x[6] = {0.5f, 2, -1, 3, -4, 0.25f};
  const float s = scale.empty() ? 1.0f : std::stof(scale);
  std::vector<float> want = Expected(x, s);
  for (int run = 0; run < 2; ++run) {
    std::vector<float> got = RunModel(session, x);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
  }
}

TEST(OrtEpAdapter, GroupsCompileAndRunOnThePlugin) { RunsOnThePlugin("ort_test", ""); }

// A session on a virtual NPU the plugin made itself: the plugin is handed its own device back
// (its CreateEp refuses any other), and the report names the virtual device.
TEST(OrtEpAdapter, ASessionRunsOnAVirtualDeviceThePluginMade) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("ort_test", OrtTestLib(), {{NX_DEVICE_NPU, {{"arch", "t2"}}}});
  std::vector<nxrt::EpDevice> npu;
  for (const nxrt::EpDevice& d : env.ep_devices())
    if (d.ep_name() == "OrtTestEp" && d.hardware().is_virtual()) npu.push_back(d);
  ASSERT_EQ(npu.size(), 1u);
  EXPECT_EQ(npu[0].hardware().metadata("arch"), "t2");
  nxrt::SessionOptions options;
  options.AppendEpDevices(npu);
  std::string bytes = ModelBytes();
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  size_t on_npu = 0;
  for (const auto& sg : session.assignment_report().subgraphs) {
    if (sg.ep_name != "OrtTestEp") continue;
    ASSERT_EQ(sg.devices.size(), 1u);
    EXPECT_TRUE(sg.devices[0].is_virtual());
    EXPECT_EQ(sg.devices[0].metadata("arch"), "t2");
    on_npu += sg.nodes.size();
  }
  EXPECT_EQ(on_npu, 3u);
  float x[6] = {0.5f, 2, -1, 3, -4, 0.25f};
  std::vector<float> want = Expected(x, 1.0f);
  std::vector<float> got = RunModel(session, x);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
}

TEST(OrtEpAdapter, EpOptionsReachThePluginAsSessionConfigEntries) {
  RunsOnThePlugin("ort_test", "2");
}

TEST(OrtEpAdapter, DroppedInitializersAreNotKernelInputs) {
  RunsOnThePlugin("ort_test.drop_initializers", "");
}

TEST(OrtEpAdapter, FailingCompileFallsBackToTheCpuEp) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("ort_test.failing_compile", OrtTestLib());
  nxrt::SessionOptions options;
  options.AppendEp("OrtTestEp");
  std::string bytes = ModelBytes();
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  nxrt::AssignmentReport report = session.assignment_report();
  bool named = false;
  for (const auto& f : report.fallbacks)
    named |= f.detail.find("OrtTestEp compile failed on purpose") != std::string::npos;
  EXPECT_TRUE(named) << "the report names the plugin's reason";
  for (const auto& sg : report.subgraphs) EXPECT_NE(sg.ep_name, "OrtTestEp");
  float x[6] = {0.5f, 2, -1, 3, -4, 0.25f};
  std::vector<float> want = Expected(x, 1.0f), got = RunModel(session, x);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
}

TEST(OrtEpAdapter, FailingComputeReportsThePluginsMessage) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("ort_test.failing_compute", OrtTestLib());
  nxrt::SessionOptions options;
  options.AppendEp("OrtTestEp");
  std::string bytes = ModelBytes();
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  float x[6] = {};
  std::string err = ErrorOf([&] { RunModel(session, x); });
  EXPECT_NE(err.find("OrtTestEp compute failed on purpose"), std::string::npos) << err;
  EXPECT_NE(ErrorOf([&] { RunModel(session, x); }), "");  // and again: the session stays usable
}

TEST(OrtEpAdapter, GarbageFromThePluginIsAnErrorNotACrash) {
  nxrt::Env env(NX_LOG_ERROR);
  std::string bytes = ModelBytes();
  float x[6] = {0.5f, 2, -1, 3, -4, 0.25f};
  const std::vector<float> want = Expected(x, 1.0f);
  auto session_for = [&](const std::string& registration, NxFallbackMode fallback) {
    env.RegisterEpLibrary(registration, OrtTestLib());
    nxrt::SessionOptions options;
    options.AppendEp("OrtTestEp");
    options.SetFallback(fallback);
    return nxrt::Session(env, bytes.data(), bytes.size(), &options);
  };
  {
    // Compute returns a status pointer the host never made.
    nxrt::Session s = session_for("ort_test.garbage_compute", NX_FALLBACK_ALLOW);
    std::string err = ErrorOf([&] { RunModel(s, x); });
    EXPECT_NE(err.find("status pointer the host did not create"), std::string::npos) << err;
  }
  env.UnregisterEpLibrary("ort_test.garbage_compute");
  {
    // Compile fills no compute info: the groups fall back, naming why.
    nxrt::Session s = session_for("ort_test.null_compute_info", NX_FALLBACK_ALLOW);
    bool named = false;
    for (const auto& f : s.assignment_report().fallbacks)
      named |= f.detail.find("Compile returned no compute info") != std::string::npos;
    EXPECT_TRUE(named);
    std::vector<float> got = RunModel(s, x);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
  }
  env.UnregisterEpLibrary("ort_test.null_compute_info");
  {
    // GetCapability claims a pointer that is no node: it claims nothing, the CPU EP runs all.
    nxrt::Session s = session_for("ort_test.foreign_node", NX_FALLBACK_ALLOW);
    for (const auto& sg : s.assignment_report().subgraphs) EXPECT_NE(sg.ep_name, "OrtTestEp");
    std::vector<float> got = RunModel(s, x);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
  }
  env.UnregisterEpLibrary("ort_test.foreign_node");
  // CreateEp returns success and no EP.
  std::string err =
      ErrorOf([&] { nxrt::Session s = session_for("ort_test.null_ep", NX_FALLBACK_ALLOW); });
  EXPECT_NE(err.find("CreateEp returned no EP"), std::string::npos) << err;
}

// `nxrt compile` with an onnxruntime plugin: the session asks it for EPContext nodes (session
// options "ep.context_enable", "ep.context_file_path", "ep.context_embed_mode", as onnxruntime
// does), its Compile returns them made with OrtModelEditorApi::CreateNode (and writes its own
// files for embed mode 0), the host writes them as they are, and a new session runs the compiled
// model on the plugin: the scale option it was compiled with is baked into the program.
class OrtCompile : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(nxrt::test::TempDir()) /
           ("ort_compile_" + std::to_string(GetParam()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    model_ = (dir_ / "model.onnx").string();
    const std::string bytes = ModelBytes();
    std::ofstream(model_, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
  }
  onnx::ModelProto Read(const std::string& path) {
    onnx::ModelProto m;
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(m.ParseFromIstream(&in)) << path;
    return m;
  }
  std::filesystem::path dir_;
  std::string model_;
};

TEST_P(OrtCompile, ThePluginsEpContextNodesAreWrittenAndRunInANewSession) {
  const bool external = GetParam() == NX_COMPILE_EXTERNAL_PAYLOADS;
  const std::string out = (dir_ / "compiled.onnx").string();
  {
    nxrt::Env env(NX_LOG_ERROR);
    env.RegisterEpLibrary("ort_test", OrtTestLib());
    nxrt::SessionOptions options;
    options.AppendEp("OrtTestEp", {{"scale", "2"}});
    std::vector<std::string> lines;
    const size_t saved = env.CompileModel(model_, &options, out, GetParam(),
                                          [&](const std::string& l) { lines.push_back(l); });
    EXPECT_EQ(saved, 3u);
    for (const std::string& l : lines)
      EXPECT_NE(l.find("as the EP wrote it"), std::string::npos) << l;
  }
  const onnx::ModelProto m = Read(out);
  size_t contexts = 0;
  for (const onnx::NodeProto& n : m.graph().node()) {
    if (n.op_type() != "EPContext") {
      EXPECT_EQ(n.op_type(), "Exp");
      continue;
    }
    ++contexts;
    EXPECT_EQ(n.domain(), "com.microsoft");
    std::map<std::string, const onnx::AttributeProto*> attrs;
    for (const auto& a : n.attribute()) attrs[a.name()] = &a;
    ASSERT_TRUE(attrs.count("source") && attrs.count("embed_mode") &&
                attrs.count("ep_cache_context"));
    EXPECT_EQ(attrs["source"]->s(), "OrtTestEp");
    EXPECT_EQ(attrs["embed_mode"]->i(), external ? 0 : 1);
    EXPECT_EQ(attrs.count("notes"), 0u) << "the plugin's node is written as it made it";
    if (external) {
      EXPECT_TRUE(std::filesystem::exists(dir_ / attrs["ep_cache_context"]->s()))
          << attrs["ep_cache_context"]->s();
    }
  }
  EXPECT_EQ(contexts, 3u);
  bool compatibility = false;
  for (const auto& p : m.metadata_props())
    compatibility |=
        p.key() == "ep_compatibility_info.OrtTestEp" && p.value() == "orttestep;program-v1";
  EXPECT_TRUE(compatibility) << "OrtEp::GetCompiledModelCompatibilityInfo lands in the metadata";

  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("ort_test", OrtTestLib());
  // OrtEpFactory::ValidateCompiledModelCompatibilityInfo answers NxEnv_GetModelCompatibility.
  // An older program of the plugin's: onnxruntime's "supported, prefer recompilation" is nxrt's
  // "supported but suboptimal"; a version of its programs it does not know is unsupported.
  const std::pair<const char*, NxCompatibility> verdicts[] = {
      {"orttestep;program-v1", NX_COMPATIBILITY_OPTIMAL},
      {"orttestep;program-v0", NX_COMPATIBILITY_SUPPORTED_SUBOPTIMAL},
      {"orttestep;program-v7", NX_COMPATIBILITY_UNSUPPORTED}};
  for (const auto& [info, verdict] : verdicts) {
    onnx::ModelProto variant = m;
    for (auto& p : *variant.mutable_metadata_props())
      if (p.key() == "ep_compatibility_info.OrtTestEp") p.set_value(info);
    const std::string path = (dir_ / "verdict.onnx").string();
    const std::string bytes = nxrt::test::Serialize(variant);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
    size_t asked = 0;
    for (const nxrt::EpDevice& d : env.ep_devices()) {
      if (d.ep_name() != "OrtTestEp") continue;
      EXPECT_EQ(env.model_compatibility(path, d), verdict) << info;
      ++asked;
    }
    EXPECT_GT(asked, 0u);
    // At session creation too, as onnxruntime: payloads that do not suit the device refuse to
    // load, with the reason; an older program runs (with a warning).
    nxrt::SessionOptions o;
    o.AppendEp("OrtTestEp");
    o.SetFallback(NX_FALLBACK_WARN);
    std::string err = ErrorOf([&] { nxrt::Session s(env, path, &o); });
    if (verdict == NX_COMPATIBILITY_UNSUPPORTED) {
      EXPECT_NE(err.find("compile the model again"), std::string::npos) << err;
      EXPECT_NE(err.find(info), std::string::npos) << err;
    } else {
      EXPECT_EQ(err, "") << info;
    }
  }
  nxrt::SessionOptions options;
  options.AppendEp("OrtTestEp");  // no scale: the compiled programs carry 2
  options.SetFallback(NX_FALLBACK_WARN);
  nxrt::Session session(env, out, &options);
  size_t on_plugin = 0;
  for (const auto& sg : session.assignment_report().subgraphs)
    if (sg.ep_name == "OrtTestEp") on_plugin += sg.nodes.size();
  EXPECT_EQ(on_plugin, 3u);
  float x[6] = {0.5f, 2, -1, 3, -4, 0.25f};
  std::vector<float> want = Expected(x, 2.0f), got = RunModel(session, x);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
}

INSTANTIATE_TEST_SUITE_P(EmbeddedAndExternal, OrtCompile,
                         ::testing::Values(NX_COMPILE_EMBED_PAYLOADS,
                                           NX_COMPILE_EXTERNAL_PAYLOADS));

TEST(OrtEpAdapter, ABadEpContextNodeFailsTheCompileWithItsReason) {
  const std::filesystem::path dir = std::filesystem::path(nxrt::test::TempDir()) / "ort_bad_ctx";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "model.onnx").string();
  // Only nodes the plugin claims, so that fallback can be forbidden.
  onnx::ModelProto m =
      MakeModel({MakeNode("Add", {"x", "x"}, {"s"}, "add"), MakeNode("Relu", {"s"}, {"y"}, "relu")},
                {"x"}, {"y"}, {2, 3});
  const std::string bytes = nxrt::test::Serialize(m);
  std::ofstream(model, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
  for (const auto& [mode, reason] : std::vector<std::pair<std::string, std::string>>{
           {"garbage_context", "OrtModelEditorApi::CreateNode did not make"},
           {"context_not_epcontext", "not an EPContext node"}}) {
    nxrt::Env env(NX_LOG_ERROR);
    env.RegisterEpLibrary("ort_test." + mode, OrtTestLib());
    nxrt::SessionOptions options;
    options.AppendEp("OrtTestEp");
    options.SetFallback(NX_FALLBACK_FORBID);
    const std::string error =
        ErrorOf([&] { env.CompileModel(model, &options, (dir / "out.onnx").string()); });
    EXPECT_NE(error.find(reason), std::string::npos) << mode << ": " << error;
  }
}

}  // namespace

// Ahead-of-time compilation (NxEnv_CompileModel, ABI version 9) with ExampleCompiler on a virtual
// NPU of an arch the machine does not have: the written model holds one EPContext node per
// compiled group (payload embedded or in a file next to it) and the compatibility string in its
// metadata; loaded again in a fresh env it runs without compiling and matches the CPU EP; an
// NPU of another arch is told apart without a session and refused with a clear error.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nxrt/nxrt.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::MakeNode;

std::string CompilerLib() {
  return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_example_compiler.so";
}

// An ExampleCompiler test hook ("ExampleCompiler_CompileCalls" / "ExampleCompiler_LoadCalls").
size_t Calls(const char* hook) {
  void* lib = dlopen(CompilerLib().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return 0;
  auto* fn = reinterpret_cast<size_t (*)()>(dlsym(lib, hook));
  dlclose(lib);
  return fn ? fn() : 0;
}

// An env with ExampleCompiler on one virtual NPU tile of `arch`, and options selecting it.
void RegisterNpu(nxrt::Env& env, const std::string& arch) {
  env.RegisterEpLibrary("compiler", CompilerLib(), {{NX_DEVICE_NPU, {{"arch", arch}}}});
}
nxrt::EpDevice Npu(nxrt::Env& env) {
  for (const nxrt::EpDevice& d : env.ep_devices())
    if (d.ep_name() == "ExampleCompiler") return d;
  throw std::runtime_error("no ExampleCompiler device");
}
nxrt::SessionOptions OnNpu(nxrt::Env& env, NxFallbackMode fallback = NX_FALLBACK_ALLOW) {
  nxrt::SessionOptions o;
  std::vector<nxrt::EpDevice> npu;
  for (const nxrt::EpDevice& d : env.ep_devices())
    if (d.ep_name() == "ExampleCompiler") npu.push_back(d);
  EXPECT_EQ(npu.size(), 1u);
  o.AppendEpDevices(npu, {});
  o.SetFallback(fallback);
  return o;
}

// x -> Add(x, x) -> Relu -> Mul(., x) -> Softmax -> y: ExampleCompiler compiles the first three,
// the CPU EP runs Softmax.
std::string Model() {
  onnx::ModelProto m =
      nxrt::test::MakeModel({MakeNode("Add", {"x", "x"}, {"a"}), MakeNode("Relu", {"a"}, {"r"}),
                             MakeNode("Mul", {"r", "x"}, {"m"}), MakeNode("Softmax", {"m"}, {"y"})},
                            {"x"}, {"y"}, {2, 3});
  for (int i = 0; i < m.graph().node_size(); ++i)
    m.mutable_graph()->mutable_node(i)->set_name("n" + std::to_string(i));
  return nxrt::test::Serialize(m);
}

const std::vector<float> kX = {-1.5f, -0.5f, 0.f, 0.5f, 1.f, 2.f};

std::vector<float> RunModel(nxrt::Session& s) {
  std::vector<float> x = kX;
  auto in = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, std::vector<int64_t>{2, 3}, x.data(), 24);
  auto out = s.Run({"x"}, {&in});
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + 6);
}

std::vector<float> CpuReference() {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = Model();
  nxrt::Session s(env, bytes.data(), bytes.size());
  return RunModel(s);
}

onnx::ModelProto ReadProto(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes.str())) << path;
  return m;
}

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

class CompileModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(nxrt::test::TempDir()) / "compile_model";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    model_ = (dir_ / "model.onnx").string();
    const std::string bytes = Model();
    std::ofstream(model_, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
  }
  // Compiles model_ for an NPU of `arch` into `name` (in dir_); returns the output path.
  std::string Compile(const std::string& arch, const std::string& name, uint32_t flags,
                      std::vector<std::string>* lines = nullptr) {
    nxrt::Env env(NX_LOG_ERROR);
    RegisterNpu(env, arch);
    nxrt::SessionOptions o = OnNpu(env);
    const std::string out = (dir_ / name).string();
    const size_t saved = env.CompileModel(model_, &o, out, flags, [&](const std::string& line) {
      if (lines) lines->push_back(line);
    });
    EXPECT_EQ(saved, 1u);
    return out;
  }
  std::filesystem::path dir_;
  std::string model_;
};

TEST_F(CompileModel, EmbeddedPayloadLoadsWithoutCompilingAndMatchesTheCpu) {
  std::vector<std::string> lines;
  const std::string out = Compile("a1", "compiled.onnx", NX_COMPILE_EMBED_PAYLOADS, &lines);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("3 nodes -> EPContext"), std::string::npos) << lines[0];

  // What was written: the EPContext node in place of n0..n2, Softmax as it was.
  const onnx::ModelProto m = ReadProto(out);
  ASSERT_EQ(m.graph().node_size(), 2);
  const onnx::NodeProto& ctx = m.graph().node(0);
  EXPECT_EQ(ctx.op_type(), "EPContext");
  EXPECT_EQ(ctx.domain(), "com.microsoft");
  EXPECT_EQ(std::vector<std::string>(ctx.input().begin(), ctx.input().end()),
            std::vector<std::string>{"x"});
  EXPECT_EQ(std::vector<std::string>(ctx.output().begin(), ctx.output().end()),
            std::vector<std::string>{"m"});
  ASSERT_NE(Attr(ctx, "source"), nullptr);
  EXPECT_EQ(Attr(ctx, "source")->s(), "ExampleCompiler");
  EXPECT_EQ(Attr(ctx, "embed_mode")->i(), 1);
  EXPECT_EQ(Attr(ctx, "ep_cache_context")->s().rfind("nxc1;", 0), 0u);
  EXPECT_EQ(Attr(ctx, "ep_sdk_version")->s(), "1.0.0");
  EXPECT_EQ(Attr(ctx, "notes")->s(), "replaces nodes: n0, n1, n2");
  EXPECT_EQ(m.graph().node(1).op_type(), "Softmax");
  bool has_compat = false, imports_domain = false;
  for (const auto& p : m.metadata_props())
    if (p.key() == "ep_compatibility_info.ExampleCompiler") {
      has_compat = true;
      EXPECT_EQ(p.value(), "ExampleCompiler;version=1;format=nxc1;arch=a1");
    }
  for (const auto& op : m.opset_import()) imports_domain |= op.domain() == "com.microsoft";
  EXPECT_TRUE(has_compat && imports_domain);

  // A fresh env that creates the device: the group is loaded, not compiled.
  nxrt::Env env(NX_LOG_ERROR);
  RegisterNpu(env, "a1");
  nxrt::SessionOptions o = OnNpu(env);
  EXPECT_EQ(env.model_compatibility(out, Npu(env)), NX_COMPATIBILITY_OPTIMAL);
  EXPECT_EQ(env.model_compatibility(model_, Npu(env)), NX_COMPATIBILITY_NOT_APPLICABLE);
  const size_t compiles = Calls("ExampleCompiler_CompileCalls");
  const size_t loads = Calls("ExampleCompiler_LoadCalls");
  nxrt::Session s(env, out, &o);
  EXPECT_EQ(Calls("ExampleCompiler_CompileCalls"), compiles);
  EXPECT_EQ(Calls("ExampleCompiler_LoadCalls"), loads + 1);
  const nxrt::AssignmentReport r = s.assignment_report();
  ASSERT_EQ(r.subgraphs.size(), 2u);
  EXPECT_EQ(r.subgraphs[0].ep_name, "ExampleCompiler");
  EXPECT_EQ(r.subgraphs[0].nodes[0].op_type, "EPContext");
  const std::vector<float> got = RunModel(s), want = CpuReference();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
}

TEST_F(CompileModel, ExternalPayloadIsAFileNextToTheModel) {
  const std::string out = Compile("a1", "external.onnx", NX_COMPILE_EXTERNAL_PAYLOADS);
  const onnx::ModelProto m = ReadProto(out);
  const onnx::NodeProto& ctx = m.graph().node(0);
  EXPECT_EQ(Attr(ctx, "embed_mode")->i(), 0);
  const std::string file = Attr(ctx, "ep_cache_context")->s();
  EXPECT_EQ(file, "external_ExampleCompiler_fused_0.ctx");
  ASSERT_TRUE(std::filesystem::exists(dir_ / file));

  nxrt::Env env(NX_LOG_ERROR);
  RegisterNpu(env, "a1");
  nxrt::SessionOptions o = OnNpu(env);
  const size_t compiles = Calls("ExampleCompiler_CompileCalls");
  nxrt::Session s(env, out, &o);
  EXPECT_EQ(Calls("ExampleCompiler_CompileCalls"), compiles);
  const std::vector<float> got = RunModel(s), want = CpuReference();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;

  // A payload path that leaves the model's folder is refused like external data.
  onnx::ModelProto hostile = m;
  for (auto& a : *hostile.mutable_graph()->mutable_node(0)->mutable_attribute())
    if (a.name() == "ep_cache_context") a.set_s("../../etc/passwd");
  const std::string hostile_path = (dir_ / "hostile.onnx").string();
  const std::string bytes = nxrt::test::Serialize(hostile);
  std::ofstream(hostile_path, std::ios::binary)
      .write(bytes.data(), static_cast<long>(bytes.size()));
  try {
    nxrt::Session bad(env, hostile_path, &o);
    FAIL() << "a payload outside the model's folder must be refused";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("EPContext"), std::string::npos) << e.what();
  }
}

TEST_F(CompileModel, AnotherArchIsReportedAndRefused) {
  const std::string out = Compile("a1", "for_a1.onnx", NX_COMPILE_EMBED_PAYLOADS);
  nxrt::Env env(NX_LOG_ERROR);
  RegisterNpu(env, "a2");
  EXPECT_EQ(env.model_compatibility(out, Npu(env)), NX_COMPATIBILITY_NEEDS_RECOMPILATION);
  nxrt::SessionOptions o = OnNpu(env, NX_FALLBACK_ALLOW);
  const size_t loads = Calls("ExampleCompiler_LoadCalls");
  try {
    nxrt::Session s(env, out, &o);
    FAIL() << "a payload for another arch must not load";
  } catch (const nxrt::Exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("needs recompilation"), std::string::npos) << what;
    EXPECT_NE(what.find("arch=a1"), std::string::npos) << what;
  }
  EXPECT_EQ(Calls("ExampleCompiler_LoadCalls"), loads);
}

// A payload whose compatibility string the EP does not know at all (another format version):
// the verdict is "unsupported", and the session refuses it before the EP loads anything.
TEST_F(CompileModel, AnUnknownPayloadFormatIsUnsupportedAndRefused) {
  const std::string out = Compile("a1", "for_a1.onnx", NX_COMPILE_EMBED_PAYLOADS);
  onnx::ModelProto m = ReadProto(out);
  bool rewritten = false;
  for (auto& p : *m.mutable_metadata_props()) {
    if (p.key() != "ep_compatibility_info.ExampleCompiler") continue;
    std::string v = p.value();
    const size_t at = v.find("version=");
    ASSERT_NE(at, std::string::npos) << v;
    v.replace(at, v.find(';', at) - at, "version=99");
    p.set_value(v);
    rewritten = true;
  }
  ASSERT_TRUE(rewritten);
  const std::string future = (dir_ / "future_format.onnx").string();
  const std::string bytes = nxrt::test::Serialize(m);
  std::ofstream(future, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));

  nxrt::Env env(NX_LOG_ERROR);
  RegisterNpu(env, "a1");
  EXPECT_EQ(env.model_compatibility(future, Npu(env)), NX_COMPATIBILITY_UNSUPPORTED);
  nxrt::SessionOptions o = OnNpu(env, NX_FALLBACK_ALLOW);
  const size_t loads = Calls("ExampleCompiler_LoadCalls");
  try {
    nxrt::Session s(env, future, &o);
    FAIL() << "a payload of an unknown format must not load";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Calls("ExampleCompiler_LoadCalls"), loads);
}

TEST_F(CompileModel, KeptOriginalNodesRunWhereThePayloadDoesNotSuit) {
  const std::string out =
      Compile("a1", "kept.onnx", NX_COMPILE_EMBED_PAYLOADS | NX_COMPILE_KEEP_ORIGINAL_NODES);
  const onnx::ModelProto m = ReadProto(out);
  const onnx::AttributeProto* kept = Attr(m.graph().node(0), "nxrt_original_nodes");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->g().node_size(), 3);
  const std::vector<float> want = CpuReference();
  {
    // The device the payload was made for: loaded, nothing compiled (not even the kept nodes).
    nxrt::Env env(NX_LOG_ERROR);
    RegisterNpu(env, "a1");
    nxrt::SessionOptions o = OnNpu(env);
    const size_t compiles = Calls("ExampleCompiler_CompileCalls");
    nxrt::Session s(env, out, &o);
    EXPECT_EQ(Calls("ExampleCompiler_CompileCalls"), compiles);
    EXPECT_EQ(s.assignment_report().subgraphs[0].nodes[0].op_type, "EPContext");
    const std::vector<float> got = RunModel(s);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
  }
  {
    // Another arch: the original nodes run (here compiled again for that arch).
    nxrt::Env env(NX_LOG_ERROR);
    RegisterNpu(env, "a2");
    nxrt::SessionOptions o = OnNpu(env);
    const size_t loads = Calls("ExampleCompiler_LoadCalls");
    nxrt::Session s(env, out, &o);
    EXPECT_EQ(Calls("ExampleCompiler_LoadCalls"), loads);
    std::vector<std::string> ops;
    for (const auto& sg : s.assignment_report().subgraphs)
      for (const auto& n : sg.nodes) ops.push_back(n.op_type);
    EXPECT_EQ(ops, (std::vector<std::string>{"Add", "Relu", "Mul", "Softmax"}));
    const std::vector<float> got = RunModel(s);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
  }
  {
    // No such EP in the session at all: the CPU EP runs the original nodes.
    nxrt::Env env(NX_LOG_ERROR);
    nxrt::Session s(env, out);
    const std::vector<float> got = RunModel(s);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
  }
  {
    // Fallback forbidden: the mismatch is an error, not a silent switch.
    nxrt::Env env(NX_LOG_ERROR);
    RegisterNpu(env, "a2");
    nxrt::SessionOptions o = OnNpu(env, NX_FALLBACK_FORBID);
    EXPECT_THROW(nxrt::Session(env, out, &o), nxrt::Exception);
  }
}

TEST_F(CompileModel, BadRequestsGiveClearErrors) {
  nxrt::Env env(NX_LOG_ERROR);
  RegisterNpu(env, "a1");
  nxrt::SessionOptions o = OnNpu(env);
  EXPECT_THROW(env.CompileModel((dir_ / "missing.onnx").string(), &o, (dir_ / "x.onnx").string()),
               nxrt::Exception);
  try {
    env.CompileModel(model_, &o, (dir_ / "no_such_dir" / "x.onnx").string());
    FAIL() << "an output folder that does not exist must be refused";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("output folder"), std::string::npos) << e.what();
  }
  NxStatus* st =
      NxEnv_CompileModel(env.get(), model_.c_str(), o.get(), (dir_ / "x.onnx").string().c_str(), 42,
                         nullptr, nullptr, nullptr);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(NxStatus_GetCode(st), NX_INVALID_ARGUMENT);
  NxStatus_Release(st);
  // Without an EP that exports, nothing is saved and the model is written unchanged.
  nxrt::SessionOptions cpu;
  EXPECT_EQ(env.CompileModel(model_, &cpu, (dir_ / "plain.onnx").string()), 0u);
  EXPECT_EQ(ReadProto((dir_ / "plain.onnx").string()).graph().node_size(), 4);
}

}  // namespace

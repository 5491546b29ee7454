// Old plugins keep loading: the same plain-C EP (tests/plugins/frozen_abi_ep.c, ABI version 1
// only) built against every released ABI header (frozen in tests/plugins/abi_vN/include) is
// registered in the current host, runs a model on its own kernels with the CPU EP's results, and
// reports errors and falls back as the version 1 rules say. See docs/abi.md.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::MakeModel;
using nxrt::test::MakeNode;
using nxrt::test::Serialize;

std::string FrozenLib(int version) {
  return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_frozen_abi_v" + std::to_string(version) +
         ".so";
}

class FrozenAbiEp : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    // Our own reference keeps the library (and its counter) loaded while the test reads it.
    lib_ = dlopen(FrozenLib(GetParam()).c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
    compute_calls_ = reinterpret_cast<size_t (*)()>(dlsym(lib_, "FrozenAbi_ComputeCalls"));
    ASSERT_NE(compute_calls_, nullptr) << dlerror();
    env_ = std::make_unique<nxrt::Env>(NX_LOG_ERROR);
    env_->RegisterEpLibrary("frozen", FrozenLib(GetParam()));
  }
  void TearDown() override {
    env_.reset();
    if (lib_ != nullptr) dlclose(lib_);
  }

  std::string EpName() const { return "FrozenAbiV" + std::to_string(GetParam()); }
  size_t ComputeCalls() const { return compute_calls_(); }

  // The model run with the frozen EP first (when `frozen`) or on the CPU EP alone.
  struct Result {
    std::vector<std::vector<float>> outputs;
    std::vector<std::pair<std::string, size_t>> ep_nodes;  // (EP, node count) per session EP
    nxrt::AssignmentReport report;
  };
  Result Run(const std::string& bytes, bool frozen, NxFallbackMode fallback,
             const std::vector<std::string>& names, const std::vector<std::vector<float>>& inputs,
             const std::vector<int64_t>& dims) {
    nxrt::SessionOptions o;
    o.SetIntraOpThreads(1);
    o.SetLogLevel(NX_LOG_ERROR);  // the placement summary of the fallback case
    if (frozen) o.AppendEp(EpName());
    o.SetFallback(fallback);
    nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
    std::vector<std::vector<float>> data = inputs;
    std::vector<nxrt::Value> values;
    for (auto& d : data)
      values.push_back(nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, d.data(), d.size() * 4));
    std::vector<const nxrt::Value*> ptrs;
    for (const auto& v : values) ptrs.push_back(&v);
    Result r;
    for (auto& v : s.Run(names, ptrs)) {
      EXPECT_EQ(v.shape(), dims);
      r.outputs.emplace_back(v.data<float>(), v.data<float>() + v.size());
    }
    for (size_t e = 0; e < s.ep_count(); ++e)
      r.ep_nodes.emplace_back(s.ep_name(e), s.ep_node_count(e));
    r.report = s.assignment_report();
    return r;
  }

  void* lib_ = nullptr;
  size_t (*compute_calls_)() = nullptr;
  std::unique_ptr<nxrt::Env> env_;
};

const std::vector<int64_t> kDims = {2, 3};
const std::vector<float> kA = {-1.5f, 0.25f, 2.0f, -0.5f, 3.0f, -4.0f};
const std::vector<float> kB = {1.0f, -0.75f, 0.5f, 0.25f, -1.0f, 1.0f};
const std::vector<float> kC = {2.0f, 3.0f, -1.0f, 0.5f, 1.5f, -2.0f};

void ExpectSame(const std::vector<std::vector<float>>& got,
                const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].size(), want[o].size());
    for (size_t i = 0; i < got[o].size(); ++i)
      EXPECT_NEAR(got[o][i], want[o][i], 1e-6f) << "output " << o << " element " << i;
  }
}

// Every node of the report's subgraphs on `ep`, and none fell back.
void ExpectAllOn(const nxrt::AssignmentReport& r, const std::string& ep, size_t nodes) {
  size_t seen = 0;
  for (const auto& sg : r.subgraphs) {
    EXPECT_EQ(sg.ep_name, ep);
    EXPECT_EQ(sg.kind, "kernels");
    seen += sg.nodes.size();
  }
  EXPECT_EQ(seen, nodes);
  EXPECT_TRUE(r.fallbacks.empty());
}

TEST_P(FrozenAbiEp, RegistersWithOneCpuEpDevice) {
  // Built against the frozen header of its version, not today's.
  auto* header_version = reinterpret_cast<uint32_t (*)()>(dlsym(lib_, "FrozenAbi_HeaderVersion"));
  ASSERT_NE(header_version, nullptr) << dlerror();
  EXPECT_EQ(header_version(), static_cast<uint32_t>(GetParam()));
  // A factory without GetSupportedDevices (any version 1-2 factory, or a later one leaving it
  // NULL) that computes in host memory gets one EP device on the CPU.
  size_t found = 0;
  for (const nxrt::EpDevice& d : env_->ep_devices()) {
    if (d.ep_name() != EpName()) continue;
    ++found;
    EXPECT_EQ(d.ep_vendor(), "nxrt tests");
    EXPECT_EQ(d.library(), "frozen");
    EXPECT_EQ(d.hardware().type(), NX_DEVICE_CPU);
    EXPECT_EQ(d.metadata("version"), "1.0.0");
  }
  EXPECT_EQ(found, 1u);
  EXPECT_EQ(env_->ep_memory(EpName()), env_->ep_memory("CPU"));
}

TEST_P(FrozenAbiEp, RunsAddReluMulOnItsOwnKernels) {
  // y = Relu(a + b) * c
  const std::string bytes = Serialize(
      MakeModel({MakeNode("Add", {"a", "b"}, {"s"}, "add"), MakeNode("Relu", {"s"}, {"r"}, "relu"),
                 MakeNode("Mul", {"r", "c"}, {"y"}, "mul")},
                {"a", "b", "c"}, {"y"}, kDims));
  const std::vector<std::string> names = {"a", "b", "c"};

  const size_t before = ComputeCalls();
  Result frozen = Run(bytes, true, NX_FALLBACK_FORBID, names, {kA, kB, kC}, kDims);
  EXPECT_EQ(ComputeCalls() - before, 3u);
  ASSERT_EQ(frozen.ep_nodes.size(), 1u);
  EXPECT_EQ(frozen.ep_nodes[0], std::make_pair(EpName(), size_t{3}));
  ExpectAllOn(frozen.report, EpName(), 3);

  const size_t cpu_before = ComputeCalls();
  Result cpu = Run(bytes, false, NX_FALLBACK_ALLOW, names, {kA, kB, kC}, kDims);
  EXPECT_EQ(ComputeCalls(), cpu_before);  // the reference really ran elsewhere
  ASSERT_EQ(cpu.ep_nodes.size(), 1u);
  EXPECT_EQ(cpu.ep_nodes[0].first, "CPU");
  ExpectSame(frozen.outputs, cpu.outputs);
  // And against plain arithmetic.
  for (size_t i = 0; i < kA.size(); ++i)
    EXPECT_FLOAT_EQ(frozen.outputs[0][i], std::max(kA[i] + kB[i], 0.0f) * kC[i]) << i;
}

TEST_P(FrozenAbiEp, RunsSigmoid) {
  const std::string bytes = Serialize(MakeModel(
      {MakeNode("Mul", {"a", "b"}, {"m"}, "mul"), MakeNode("Sigmoid", {"m"}, {"y"}, "sigmoid")},
      {"a", "b"}, {"y"}, kDims));
  const size_t before = ComputeCalls();
  Result frozen = Run(bytes, true, NX_FALLBACK_FORBID, {"a", "b"}, {kA, kB}, kDims);
  EXPECT_EQ(ComputeCalls() - before, 2u);
  ExpectAllOn(frozen.report, EpName(), 2);
  Result cpu = Run(bytes, false, NX_FALLBACK_ALLOW, {"a", "b"}, {kA, kB}, kDims);
  ExpectSame(frozen.outputs, cpu.outputs);
}

TEST_P(FrozenAbiEp, KernelErrorReachesTheCaller) {
  // Add of [2,3] and [3] is valid ONNX (broadcasting), which this EP claims by type and then
  // refuses at run time with its own status: code and message cross the ABI unchanged.
  onnx::ModelProto m =
      MakeModel({MakeNode("Add", {"a", "b"}, {"y"}, "add")}, {"a", "b"}, {"y"}, kDims);
  m.mutable_graph()->mutable_input(1)->Clear();
  nxrt::test::AddFloatValue(m.mutable_graph()->mutable_input(1), "b", {3});
  const std::string bytes = Serialize(m);
  nxrt::SessionOptions o;
  o.AppendEp(EpName());
  o.SetFallback(NX_FALLBACK_FORBID);
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  std::vector<float> a = kA, b = {1.0f, 2.0f, 3.0f};
  const std::vector<int64_t> b_dims = {3};
  auto va = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, kDims, a.data(), a.size() * 4);
  auto vb = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, b_dims, b.data(), b.size() * 4);
  const size_t before = ComputeCalls();
  try {
    s.Run({"a", "b"}, {&va, &vb});
    FAIL() << "the frozen EP's Add accepted mismatched shapes";
  } catch (const nxrt::Exception& e) {
    EXPECT_EQ(e.code(), NX_INVALID_ARGUMENT) << e.what();
    const std::string msg = e.what();
    EXPECT_NE(msg.find(EpName() + " Add: input shapes [2,3] and [3] differ"), std::string::npos)
        << msg;
  }
  EXPECT_EQ(ComputeCalls() - before, 1u);
}

TEST_P(FrozenAbiEp, OpItLacksFallsBackToCpu) {
  // Add -> Softmax -> Mul: the frozen EP has no Softmax.
  const std::string bytes = Serialize(MakeModel(
      {MakeNode("Add", {"a", "b"}, {"s"}, "add"), MakeNode("Softmax", {"s"}, {"p"}, "softmax"),
       MakeNode("Mul", {"p", "b"}, {"y"}, "mul")},
      {"a", "b"}, {"y"}, kDims));
  const size_t before = ComputeCalls();
  Result mixed = Run(bytes, true, NX_FALLBACK_ALLOW, {"a", "b"}, {kA, kB}, kDims);
  EXPECT_EQ(ComputeCalls() - before, 2u);
  size_t on_frozen = 0, on_cpu = 0;
  for (const auto& [ep, n] : mixed.ep_nodes) (ep == EpName() ? on_frozen : on_cpu) += n;
  EXPECT_EQ(on_frozen, 2u);
  EXPECT_EQ(on_cpu, 1u);
  ASSERT_EQ(mixed.report.fallbacks.size(), 1u);
  const auto& f = mixed.report.fallbacks[0];
  EXPECT_EQ(f.node.name, "softmax");
  EXPECT_EQ(f.preferred_ep, EpName());
  EXPECT_EQ(f.assigned_ep, "CPU");
  EXPECT_EQ(f.reason, NX_FALLBACK_NO_KERNEL);

  Result cpu = Run(bytes, false, NX_FALLBACK_ALLOW, {"a", "b"}, {kA, kB}, kDims);
  ExpectSame(mixed.outputs, cpu.outputs);

  // With fallback forbidden the same model is refused, naming the node.
  nxrt::SessionOptions o;
  o.AppendEp(EpName());
  o.SetFallback(NX_FALLBACK_FORBID);
  try {
    nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
    FAIL() << "a node no selected EP claims was accepted with fallback forbidden";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("softmax"), std::string::npos) << e.what();
  }
}

// One instance per frozen header: FrozenAbi/FrozenAbiEp.<test>/v<N>. Keep the range in step with
// NXRT_FROZEN_ABI_VERSIONS in tests/CMakeLists.txt.
INSTANTIATE_TEST_SUITE_P(FrozenAbi, FrozenAbiEp, ::testing::Range(1, NXRT_FROZEN_ABI_LAST + 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "v" + std::to_string(info.param);
                         });

}  // namespace

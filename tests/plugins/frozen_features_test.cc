// Old plugins that use the features of their version keep working: the plain-C EP
// tests/plugins/frozen_features_ep.c, built against every released ABI header from version 2 on
// (frozen in tests/plugins/abi_vN/include), uses each feature exactly as its version defined it
// and is loaded into the current host here: pre-packed and shared weights, scratch and
// ParallelFor (2), an EP memory of its own (2), Loop and Scan through the host's kernels with the
// EP's helpers (4, and the Scan helper's SliceAxis0 / ConcatOutput from 5), compiled groups on a
// declared device with profile events (6), compiled models saved and loaded again (9), an EP
// statistic (11), immediate streams (13) and the versioned alias and key/value pairs (14). Each
// run is checked against the CPU EP, and the library's own counters tell what ran where. See
// docs/abi.md, "The frozen-plugin test".
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nxrt/nxrt_ep_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nxrt/nxrt.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "controlflow/cf_models.h"
#include "test_util.h"

namespace {

using namespace nxrt::test::cf;
using nxrt::test::MakeFloatTensor;

std::string FeaturesLib(int version) {
  return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_frozen_features_v" + std::to_string(version) +
         ".so";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

nxrt::Value Floats(const std::vector<int64_t>& dims, const std::vector<float>& v) {
  auto t = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// Every output's shape and elements as floats.
struct Outputs {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> values;
};

Outputs RunSession(nxrt::Session& s, const std::vector<std::string>& names,
                   const std::vector<const nxrt::Value*>& inputs) {
  Outputs r;
  for (auto& v : s.Run(names, inputs)) {
    r.shapes.push_back(v.shape());
    r.values.emplace_back(v.data<float>(), v.data<float>() + v.size());
  }
  return r;
}

void ExpectSame(const Outputs& got, const Outputs& want) {
  ASSERT_EQ(got.values.size(), want.values.size());
  EXPECT_EQ(got.shapes, want.shapes);
  for (size_t o = 0; o < got.values.size(); ++o) {
    ASSERT_EQ(got.values[o].size(), want.values[o].size()) << "output " << o;
    for (size_t i = 0; i < got.values[o].size(); ++i)
      EXPECT_NEAR(got.values[o][i], want.values[o][i], 1e-5f) << "output " << o << " element " << i;
  }
}

// The model on the CPU EP alone: the reference.
Outputs CpuReference(const std::string& bytes, const std::vector<std::string>& names,
                     const std::vector<const nxrt::Value*>& inputs) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, bytes.data(), bytes.size());
  return RunSession(s, names, inputs);
}

// Every node of every graph (control-flow bodies included) on `ep`, none fell back.
void ExpectAllOn(const nxrt::AssignmentReport& r, const std::string& ep) {
  EXPECT_FALSE(r.subgraphs.empty());
  for (const auto& sg : r.subgraphs) EXPECT_EQ(sg.ep_name, ep) << "graph '" << sg.graph << "'";
  EXPECT_TRUE(r.fallbacks.empty());
}

// ---- Models ---------------------------------------------------------------------------------

const std::vector<float> kW = {0.5f, -1.0f, 2.0f,  0.25f, 1.5f,   -0.5f,
                               3.0f, 1.0f,  -2.0f, 0.75f, -1.25f, 0.0f};  // [3, 4]
const std::vector<float> kX = {1.0f, -2.0f, 0.5f, 3.0f, 0.25f, -1.0f};    // [2, 3]

// y[2,4] = MatMul(x[2,3], w[3,4]) with w an initializer (`constant`) or a graph input.
std::string MatMulModel(bool constant) {
  std::vector<onnx::ValueInfoProto> inputs = {Info("x", F, {2, 3})};
  std::vector<onnx::TensorProto> initializers;
  if (constant)
    initializers.push_back(MakeFloatTensor("w", {3, 4}, kW));
  else
    inputs.push_back(Info("w", F, {3, 4}));
  return Model(Graph("matmul", {MakeNode("MatMul", {"x", "w"}, {"y"}, "matmul")}, inputs,
                     {Info("y", F, {2, 4})}, initializers));
}

// Loop M times: a = a - 1 (as a + (-1)), carried (C) and stacked per iteration (D); the
// condition passes through Identity.
std::string LoopModel() {
  auto body = Graph("body",
                    {MakeNode("Identity", {"cond_in"}, {"cond_out"}, "cond"),
                     MakeNode("Add", {"a_in", "minus_one"}, {"a_out"}, "step"),
                     MakeNode("Identity", {"a_out"}, {"scan_out"}, "keep")},
                    {Info("iter", I64, {}), Info("cond_in", B, {}), Info("a_in", F, {1})},
                    {Info("cond_out", B, {}), Info("a_out", F, {1}), Info("scan_out", F, {1})},
                    {MakeFloatTensor("minus_one", {1}, {-1.0f})});
  auto loop = WithGraph(MakeNode("Loop", {"M", "", "A"}, {"C", "D"}, "loop"), "body", body);
  return Model(Graph("loop", {loop}, {Info("M", I64, {}), Info("A", F, {1})},
                     {Info("C", F, {1}), Info("D", F, {3, 1})}));
}

// Scan over X [3, 3] along `axis`: each slice doubled (Y, stacked back along `axis`) and a
// running sum carried (S).
std::string ScanModel(int64_t axis) {
  auto body =
      Graph("body",
            {MakeNode("Mul", {"x", "two"}, {"y"}, "double"),
             MakeNode("Add", {"s_in", "x"}, {"s_out"}, "sum")},
            {Info("s_in", F, {3}), Info("x", F, {3})}, {Info("s_out", F, {3}), Info("y", F, {3})},
            {MakeFloatTensor("two", {1}, {2.0f})});
  auto scan = WithGraph(MakeNode("Scan", {"S0", "X"}, {"S", "Y"}, "scan"), "body", body);
  nxrt::test::AddIntAttribute(&scan, "num_scan_inputs", 1);
  if (axis != 0) {
    nxrt::test::AddIntsAttribute(&scan, "scan_input_axes", {axis});
    nxrt::test::AddIntsAttribute(&scan, "scan_output_axes", {axis});
  }
  return Model(Graph("scan", {scan}, {Info("S0", F, {3}), Info("X", F, {3, 3})},
                     {Info("S", F, {3}), Info("Y", F, {3, 3})}));
}

// y = Relu(a + b) * c: Add -> Relu is the group a version 6 build compiles.
std::string AddReluMulModel() {
  return Model(Graph(
      "add_relu_mul",
      {MakeNode("Add", {"a", "b"}, {"s"}, "add"), MakeNode("Relu", {"s"}, {"r"}, "relu"),
       MakeNode("Mul", {"r", "c"}, {"y"}, "mul")},
      {Info("a", F, {2, 3}), Info("b", F, {2, 3}), Info("c", F, {2, 3})}, {Info("y", F, {2, 3})}));
}

const std::vector<float> kA = {-1.5f, 0.25f, 2.0f, -0.5f, 3.0f, -4.0f};
const std::vector<float> kB = {1.0f, -0.75f, 0.5f, 0.25f, -1.0f, 1.0f};
const std::vector<float> kC = {2.0f, 3.0f, -1.0f, 0.5f, 1.5f, -2.0f};

// ---- Fixture ----------------------------------------------------------------------------------

class FrozenFeatures : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    // Our own reference keeps the library (and its counters) loaded while the test reads them.
    lib_ = dlopen(FeaturesLib(GetParam()).c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
    count_ = reinterpret_cast<size_t (*)(const char*)>(dlsym(lib_, "FrozenFeatures_Count"));
    ASSERT_NE(count_, nullptr) << dlerror();
    env_ = std::make_unique<nxrt::Env>(NX_LOG_ERROR);
    env_->RegisterEpLibrary("features", FeaturesLib(GetParam()));
  }
  void TearDown() override {
    env_.reset();
    // Every block of the EP's own memory went back to it (sessions, arenas and env are gone).
    if (count_ != nullptr) {
      EXPECT_EQ(Count("dev_alloc"), Count("dev_free"));
    }
    if (lib_ != nullptr) dlclose(lib_);
  }

  int Version() const { return GetParam(); }
  std::string Ep() const { return "FrozenFeaturesV" + std::to_string(GetParam()); }
  std::string DevEp() const { return Ep() + "Dev"; }
  size_t Count(const char* name) const {
    const size_t n = count_(name);
    EXPECT_NE(n, SIZE_MAX) << "the library keeps no counter '" << name << "'";
    return n;
  }

  // `ep` first, fallback forbidden unless `allow`, two intra-op threads (ParallelFor).
  static nxrt::SessionOptions On(const std::string& ep,
                                 NxFallbackMode fallback = NX_FALLBACK_FORBID) {
    nxrt::SessionOptions o;
    o.SetIntraOpThreads(2);
    o.SetLogLevel(NX_LOG_ERROR);
    o.AppendEp(ep);
    o.SetFallback(fallback);
    return o;
  }

  void* lib_ = nullptr;
  size_t (*count_)(const char*) = nullptr;
  std::unique_ptr<nxrt::Env> env_;
};

std::string VersionName(const ::testing::TestParamInfo<int>& info) {
  return "v" + std::to_string(info.param);
}

// ---- Version 2: memory, pre-packing, scratch, ParallelFor (every build) -----------------------

using FrozenFeaturesV2 = FrozenFeatures;

TEST_P(FrozenFeaturesV2, RegistersAHostAndADeviceMemoryFactory) {
  auto* header_version =
      reinterpret_cast<uint32_t (*)()>(dlsym(lib_, "FrozenFeatures_HeaderVersion"));
  ASSERT_NE(header_version, nullptr) << dlerror();
  EXPECT_EQ(header_version(), static_cast<uint32_t>(Version()));
  // A factory without GetSupportedDevices gets one EP device on the CPU when it computes in host
  // memory, none when it names a memory of its own (it can still be appended by name).
  size_t host_devices = 0, dev_devices = 0;
  for (const nxrt::EpDevice& d : env_->ep_devices()) {
    if (d.ep_name() == Ep()) {
      ++host_devices;
      EXPECT_EQ(d.hardware().type(), NX_DEVICE_CPU);
    }
    dev_devices += d.ep_name() == DevEp();
  }
  EXPECT_EQ(host_devices, 1u);
  EXPECT_EQ(dev_devices, 0u);
  EXPECT_EQ(env_->ep_memory(Ep()), env_->ep_memory("CPU"));
  const NxMemoryInfo* dev = env_->ep_memory(DevEp());
  ASSERT_NE(dev, nullptr);
  EXPECT_STREQ(dev->name, "FrozenFeaturesDev");
  EXPECT_EQ(dev->vendor_id, 0xFEA7u);
  EXPECT_EQ(dev->device_id, Version());
  EXPECT_EQ(dev->kind, NX_MEMORY_DEVICE);
}

TEST_P(FrozenFeaturesV2, ConstantWeightIsPackedOncePerSessionAndShared) {
  const std::string bytes = MatMulModel(true);
  auto x = Floats({2, 3}, kX);
  const Outputs want = CpuReference(bytes, {"x"}, {&x});
  const size_t prepack = Count("prepack"), packed = Count("packed"), shared = Count("use_shared"),
               owned = Count("packed_owned");
  nxrt::SessionOptions o = On(Ep());
  nxrt::Session a(*env_, bytes.data(), bytes.size(), &o);
  // One constant weight, one PrePackWeight call: the packing went to the host's cache and came
  // back through UseSharedPrePackedWeight.
  EXPECT_EQ(Count("prepack") - prepack, 1u);
  EXPECT_EQ(Count("packed") - packed, 1u);
  EXPECT_EQ(Count("use_shared") - shared, 1u);
  EXPECT_EQ(Count("packed_owned"), owned);
  EXPECT_EQ(a.statistic("prepack.calls"), 1);
  EXPECT_EQ(a.statistic("prepack.weights"), 1);
  ExpectAllOn(a.assignment_report(), Ep());

  const size_t computes = Count("matmul_packed"), chunks = Count("parallel_chunks");
  for (int run = 0; run < 3; ++run) ExpectSame(RunSession(a, {"x"}, {&x}), want);
  EXPECT_EQ(Count("matmul_packed") - computes, 3u);
  EXPECT_GE(Count("parallel_chunks") - chunks, 3u);  // rows through ParallelFor, every run
  EXPECT_EQ(Count("prepack") - prepack, 1u) << "runs must not pack again";

  // A second session of the same env takes the shared packing without packing.
  nxrt::Session b(*env_, bytes.data(), bytes.size(), &o);
  EXPECT_EQ(Count("prepack") - prepack, 1u);
  EXPECT_EQ(Count("use_shared") - shared, 2u);
  EXPECT_EQ(b.statistic("prepack.calls"), 0);
  EXPECT_EQ(b.statistic("prepack.shared_hits"), 1);
  ExpectSame(RunSession(b, {"x"}, {&x}), want);

  // Sharing switched off: the host offers no cache, the kernel keeps (and frees) its packing.
  nxrt::SessionOptions own = On(Ep());
  own.SetConfig("session.share_prepacked_weights", "0");
  {
    nxrt::Session c(*env_, bytes.data(), bytes.size(), &own);
    EXPECT_EQ(Count("prepack") - prepack, 2u);
    EXPECT_EQ(Count("packed_owned") - owned, 1u);
    EXPECT_EQ(Count("use_shared") - shared, 2u);
    ExpectSame(RunSession(c, {"x"}, {&x}), want);
  }
  EXPECT_EQ(Count("matmul_packed") - computes, 5u);
}

TEST_P(FrozenFeaturesV2, WeightGivenAsAnInputIsNotPackedAndUsesScratch) {
  const std::string bytes = MatMulModel(false);
  auto x = Floats({2, 3}, kX);
  auto w = Floats({3, 4}, kW);
  const size_t prepack = Count("prepack"), unpacked = Count("matmul_unpacked"),
               scratch = Count("scratch");
  nxrt::SessionOptions o = On(Ep());
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  EXPECT_EQ(Count("prepack"), prepack);  // no constant input
  ExpectSame(RunSession(s, {"x", "w"}, {&x, &w}), CpuReference(bytes, {"x", "w"}, {&x, &w}));
  EXPECT_EQ(Count("matmul_unpacked") - unpacked, 1u);
  EXPECT_EQ(Count("scratch") - scratch, 1u);
}

TEST_P(FrozenFeaturesV2, DeviceMemoryEpPacksIntoItsOwnMemoryAndCopiesThroughItsTransfer) {
  const std::string bytes = MatMulModel(true);
  auto x = Floats({2, 3}, kX);
  const Outputs want = CpuReference(bytes, {"x"}, {&x});
  const size_t copies = Count("dev_copy"), owned = Count("packed_owned"),
               shared = Count("use_shared"), allocs = Count("dev_alloc");
  nxrt::SessionOptions o = On(DevEp());
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  // Packings in device memory are never shared: the kernel owns it, in the EP's allocator.
  EXPECT_EQ(Count("packed_owned") - owned, 1u);
  EXPECT_EQ(Count("use_shared"), shared);
  EXPECT_GT(Count("dev_alloc"), allocs);
  const nxrt::AssignmentReport r = s.assignment_report();
  ExpectAllOn(r, DevEp());
  EXPECT_FALSE(r.copies.empty());  // x in, y out
  ExpectSame(RunSession(s, {"x"}, {&x}), want);
  EXPECT_GE(Count("dev_copy") - copies, 2u);
}

// ---- Version 11: an EP's statistic; version 13: immediate streams --------------------------

class FrozenFeaturesV11 : public FrozenFeatures {};

// Identity declares its output an alias of its input: through NxKernelDef::aliases up to version
// 13, through the versioned aliases2 from 14. Either way the host hands the input's buffer out.
TEST_P(FrozenFeaturesV2, IdentityDeclaredAsAnAliasGetsItsInputsBuffer) {
  const std::string bytes = Model(
      Graph("add_identity_relu",
            {MakeNode("Add", {"a", "b"}, {"s"}, "add"), MakeNode("Identity", {"s"}, {"t"}, "same"),
             MakeNode("Relu", {"t"}, {"y"}, "relu")},
            {Info("a", F, {2, 3}), Info("b", F, {2, 3})}, {Info("y", F, {2, 3})}));
  auto a = Floats({2, 3}, kA), b = Floats({2, 3}, kB);
  nxrt::SessionOptions o = On(Ep());
  o.SetOptimizationLevel(0);  // keeps the Identity (level 1 bypasses every Identity)
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  ExpectAllOn(s.assignment_report(), Ep());
  const size_t aliased = Count("identity_aliased");
  ExpectSame(RunSession(s, {"a", "b"}, {&a, &b}), CpuReference(bytes, {"a", "b"}, {&a, &b}));
  EXPECT_EQ(Count("identity_aliased") - aliased, 1u);
}

TEST_P(FrozenFeaturesV11, TheEpsStatisticReachesTheSession) {
  const std::string bytes = MatMulModel(true);
  auto x = Floats({2, 3}, kX);
  nxrt::SessionOptions o = On(Ep());
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  RunSession(s, {"x"}, {&x});
  // The EP's counter, read through the host as "ep.<EP>.<key>" (NxEp::GetStatistic).
  EXPECT_EQ(s.statistic("ep." + Ep() + ".matmul_packed"),
            static_cast<int64_t>(Count("matmul_packed")));
  try {
    s.statistic("ep." + Ep() + ".no_such_counter");
    ADD_FAILURE() << "an unknown statistic was found";
  } catch (const nxrt::Exception& e) {
    EXPECT_EQ(e.code(), NX_NOT_FOUND) << e.what();
  }
}

class FrozenFeaturesV13 : public FrozenFeatures {};

TEST_P(FrozenFeaturesV13, TheDeviceEpsImmediateStreamsCarryItsWork) {
  const std::string bytes = Model(
      Graph("add_relu",
            {MakeNode("Add", {"a", "b"}, {"t"}, "add"), MakeNode("Relu", {"t"}, {"y"}, "relu")},
            {Info("a", F, {2, 3}), Info("b", F, {2, 3})}, {Info("y", F, {2, 3})}));
  auto a = Floats({2, 3}, kX);
  auto b = Floats({2, 3}, {0.5f, 0.5f, -1.0f, -4.0f, 1.0f, 2.0f});
  const Outputs want = CpuReference(bytes, {"a", "b"}, {&a, &b});
  const size_t streams = Count("streams"), freed = Count("streams_freed"), events = Count("events"),
               copies = Count("async_copies"), computes = Count("stream_computes");
  {
    nxrt::SessionOptions o = On(DevEp());
    nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
    ExpectAllOn(s.assignment_report(), DevEp());
    // Kernels, copies to the Dev memory (a, b), copies back (y): three streams.
    EXPECT_EQ(s.statistic("streams"), 3);
    EXPECT_EQ(Count("streams") - streams, 3u);
    for (int run = 0; run < 3; ++run) ExpectSame(RunSession(s, {"a", "b"}, {&a, &b}), want);
    EXPECT_EQ(Count("stream_computes") - computes, 6u);  // Add and Relu, every run
    EXPECT_EQ(Count("async_copies") - copies, 9u);       // a, b in and y out, every run
    EXPECT_GT(Count("events"), events);                  // Add's output read by the y copy
  }
  EXPECT_EQ(Count("streams_freed") - freed, 3u);  // released with the session
}

// Every build: FrozenFeatures/FrozenFeaturesV2.<test>/v<N>. Keep the ranges in step with
// NXRT_FROZEN_ABI_VERSIONS in tests/CMakeLists.txt.
INSTANTIATE_TEST_SUITE_P(FrozenFeatures, FrozenFeaturesV2,
                         ::testing::Range(2, NXRT_FROZEN_ABI_LAST + 1), VersionName);

// ---- Version 4 (and 5): Loop and Scan through the host's kernels ------------------------------

using FrozenFeaturesV4 = FrozenFeatures;

TEST_P(FrozenFeaturesV4, ScanHelperHasTheMembersOfItsVersion) {
  auto* size = reinterpret_cast<size_t (*)()>(dlsym(lib_, "FrozenFeatures_ScanHelperSize"));
  ASSERT_NE(size, nullptr) << dlerror();
  // Version 4's NxScanHelper ends where version 5 appended SliceAxis0 and ConcatOutput, versions
  // 5-12's where version 13 appended the *OnStream members: the host must not read past them.
  if (Version() == 4)
    EXPECT_EQ(size(), offsetof(NxScanHelper, SliceAxis0));
  else if (Version() < 13)
    EXPECT_EQ(size(), offsetof(NxScanHelper, TransposeOnStream));
  else
    EXPECT_EQ(size(), sizeof(NxScanHelper));
}

TEST_P(FrozenFeaturesV4, LoopRunsThroughTheHostKernelWithTheEpsHelper) {
  const std::string bytes = LoopModel();
  auto m = Scalar64(3);
  auto a = Floats({1}, {10.0f});
  const size_t kernels = Count("loop_kernels"), concat = Count("loop_concat"),
               released = Count("helper_release");
  {
    nxrt::SessionOptions o = On(Ep());
    nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
    EXPECT_EQ(Count("loop_kernels") - kernels, 1u);
    ExpectAllOn(s.assignment_report(), Ep());  // the Loop and its body's nodes
    const Outputs got = RunSession(s, {"M", "A"}, {&m, &a});
    EXPECT_EQ(got.values[0], std::vector<float>{7.0f});
    EXPECT_EQ(got.values[1], (std::vector<float>{9.0f, 8.0f, 7.0f}));
    ExpectSame(got, CpuReference(bytes, {"M", "A"}, {&m, &a}));
    // D was stacked by the EP's helper (even in host memory, the host uses it when given).
    EXPECT_EQ(Count("loop_concat") - concat, 1u);
  }
  EXPECT_EQ(Count("helper_release") - released, 1u);  // the host released the helper it owned
}

TEST_P(FrozenFeaturesV4, ScanOverAxisOneTransposesThroughTheEpsHelper) {
  const std::string bytes = ScanModel(1);
  auto s0 = Floats({3}, {0.5f, 0.5f, 0.5f});
  auto x = Floats({3, 3}, {1, 2, 3, 10, 20, 30, 100, 200, 300});
  const size_t kernels = Count("scan_kernels"), transposes = Count("scan_transpose"),
               slices = Count("scan_slice"), concats = Count("scan_concat");
  nxrt::SessionOptions o = On(Ep());
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  EXPECT_EQ(Count("scan_kernels") - kernels, 1u);
  ExpectAllOn(s.assignment_report(), Ep());
  const Outputs got = RunSession(s, {"S0", "X"}, {&s0, &x});
  EXPECT_EQ(got.values[0], (std::vector<float>{6.5f, 60.5f, 600.5f}));  // sums of the rows
  ExpectSame(got, CpuReference(bytes, {"S0", "X"}, {&s0, &x}));
  EXPECT_EQ(Count("scan_transpose") - transposes, 2u);  // the input in, the output back
  // Host memory: the host slices and stacks itself, with or without the version 5 helpers.
  EXPECT_EQ(Count("scan_slice"), slices);
  EXPECT_EQ(Count("scan_concat"), concats);
}

TEST_P(FrozenFeaturesV4, LoopOnDeviceMemoryStacksThroughTheEpsHelper) {
  const std::string bytes = LoopModel();
  auto m = Scalar64(3);
  auto a = Floats({1}, {10.0f});
  const size_t concat = Count("loop_concat");
  nxrt::SessionOptions o = On(DevEp());
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  ExpectAllOn(s.assignment_report(), DevEp());
  ExpectSame(RunSession(s, {"M", "A"}, {&m, &a}), CpuReference(bytes, {"M", "A"}, {&m, &a}));
  EXPECT_EQ(Count("loop_concat") - concat, 1u);
}

// Scan inputs in memory the host cannot read need SliceAxis0 and ConcatOutput, which version 5
// added: a version 4 build gets a clear error (and the host never looks past its helper's end),
// later builds slice and stack through their helper.
TEST_P(FrozenFeaturesV4, ScanOnDeviceMemoryNeedsTheVersion5Helpers) {
  const std::string bytes = ScanModel(0);
  auto s0 = Floats({3}, {0.0f, 0.0f, 0.0f});
  auto x = Floats({3, 3}, {1, 2, 3, 10, 20, 30, 100, 200, 300});
  const size_t slices = Count("scan_slice"), concats = Count("scan_concat");
  nxrt::SessionOptions o = On(DevEp());
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  ExpectAllOn(s.assignment_report(), DevEp());
  if (Version() == 4) {
    try {
      s.Run({"S0", "X"}, {&s0, &x});
      FAIL() << "a version 4 Scan helper cannot slice device tensors";
    } catch (const nxrt::Exception& e) {
      EXPECT_EQ(e.code(), NX_NOT_IMPLEMENTED) << e.what();
      EXPECT_NE(std::string(e.what()).find("SliceAxis0"), std::string::npos) << e.what();
    }
    return;
  }
  const Outputs got = RunSession(s, {"S0", "X"}, {&s0, &x});
  EXPECT_EQ(got.values[0], (std::vector<float>{111.0f, 222.0f, 333.0f}));
  ExpectSame(got, CpuReference(bytes, {"S0", "X"}, {&s0, &x}));
  EXPECT_EQ(Count("scan_slice") - slices, 3u);  // one per row
  EXPECT_EQ(Count("scan_concat") - concats, 1u);
}

INSTANTIATE_TEST_SUITE_P(FrozenFeatures, FrozenFeaturesV4,
                         ::testing::Range(4, NXRT_FROZEN_ABI_LAST + 1), VersionName);

// ---- Version 6: compiled groups on a declared device, profile events --------------------------

using FrozenFeaturesV6 = FrozenFeatures;

TEST_P(FrozenFeaturesV6, AddReluIsCompiledAsOneGroupOnItsDeclaredDevice) {
  const std::string bytes = AddReluMulModel();
  auto a = Floats({2, 3}, kA), b = Floats({2, 3}, kB), c = Floats({2, 3}, kC);
  const std::vector<std::string> names = {"a", "b", "c"};
  const size_t compiles = Count("compile"), fused = Count("fused_compute"),
               computes = Count("compute");
  nxrt::SessionOptions o = On(Ep());
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  EXPECT_EQ(Count("compile") - compiles, 1u);
  const nxrt::AssignmentReport r = s.assignment_report();
  ExpectAllOn(r, Ep());
  ASSERT_EQ(r.subgraphs.size(), 2u);
  EXPECT_EQ(r.subgraphs[0].kind, "fused");
  ASSERT_EQ(r.subgraphs[0].nodes.size(), 2u);
  EXPECT_EQ(r.subgraphs[0].nodes[0].op_type, "Add");
  EXPECT_EQ(r.subgraphs[0].nodes[1].op_type, "Relu");
  // The device the group was declared on (NxFusionOptions): the EP's one device, the CPU.
  ASSERT_EQ(r.subgraphs[0].devices.size(), 1u);
  EXPECT_EQ(r.subgraphs[0].devices[0].type(), NX_DEVICE_CPU);
  EXPECT_EQ(r.subgraphs[1].kind, "kernels");
  EXPECT_EQ(s.ep_node_count(0), 2u);  // the fused node and Mul

  const Outputs got = RunSession(s, names, {&a, &b, &c});
  ExpectSame(got, CpuReference(bytes, names, {&a, &b, &c}));
  for (size_t i = 0; i < kA.size(); ++i)
    EXPECT_FLOAT_EQ(got.values[0][i], std::max(kA[i] + kB[i], 0.0f) * kC[i]) << i;
  EXPECT_EQ(Count("fused_compute") - fused, 1u);
  EXPECT_EQ(Count("compute") - computes, 2u);
}

TEST_P(FrozenFeaturesV6, CompiledKernelAddsItsProfileEvent) {
  const std::string bytes = AddReluMulModel();
  auto a = Floats({2, 3}, kA), b = Floats({2, 3}, kB), c = Floats({2, 3}, kC);
  const std::string path = nxrt::test::TempDir() + "/frozen_features_" + Ep() + ".json";
  std::filesystem::remove(path);
  const size_t events = Count("profile_events");
  {
    nxrt::SessionOptions o = On(Ep());
    o.SetProfileFile(path);
    nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
    RunSession(s, {"a", "b", "c"}, {&a, &b, &c});
    s.EndProfiling();
  }
  EXPECT_EQ(Count("profile_events") - events, 1u);
  const std::string json = ReadFile(path);
  EXPECT_NE(json.find("\"" + Ep() + " add_relu\""), std::string::npos) << json;
  EXPECT_NE(json.find("add_relu:0,1"), std::string::npos) << json;  // its argument
  // Without a profile the kernel adds nothing.
  nxrt::SessionOptions o = On(Ep());
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  RunSession(s, {"a", "b", "c"}, {&a, &b, &c});
  EXPECT_EQ(Count("profile_events") - events, 1u);
}

INSTANTIATE_TEST_SUITE_P(FrozenFeatures, FrozenFeaturesV6,
                         ::testing::Range(6, NXRT_FROZEN_ABI_LAST + 1), VersionName);

// ---- Version 9: compiled models saved and loaded again ----------------------------------------
// Versions 6-8 compile groups but cannot export them: the host saves their nodes as they were.

class FrozenFeaturesCompiled : public FrozenFeatures {
 protected:
  void SetUp() override {
    FrozenFeatures::SetUp();
    dir_ = std::filesystem::path(nxrt::test::TempDir()) / ("frozen_features_" + Ep());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    model_ = (dir_ / "model.onnx").string();
    const std::string bytes = AddReluMulModel();
    std::ofstream(model_, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
  }
  std::filesystem::path dir_;
  std::string model_;
};

TEST_P(FrozenFeaturesCompiled, CompiledModelRoundTripsIntoANewEnv) {
  auto a = Floats({2, 3}, kA), b = Floats({2, 3}, kB), c = Floats({2, 3}, kC);
  const std::vector<std::string> names = {"a", "b", "c"};
  const std::string bytes = AddReluMulModel();
  const Outputs want = CpuReference(bytes, names, {&a, &b, &c});
  const std::string out = (dir_ / "compiled.onnx").string();
  const size_t compiles = Count("compile"), exports = Count("export");
  nxrt::SessionOptions o = On(Ep());
  const size_t saved = env_->CompileModel(model_, &o, out, NX_COMPILE_EMBED_PAYLOADS);
  EXPECT_EQ(Count("compile") - compiles, 1u);
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(ReadFile(out))) << out;
  std::vector<std::string> ops;
  for (const auto& n : written.graph().node()) ops.push_back(n.op_type());

  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("features", FeaturesLib(Version()));
  nxrt::SessionOptions again = On(Ep());
  if (Version() < 9) {
    // No ExportCompiledGroup: the group stays as its nodes and compiles again when loaded.
    EXPECT_EQ(saved, 0u);
    EXPECT_EQ(Count("export"), exports);
    EXPECT_EQ(ops, (std::vector<std::string>{"Add", "Relu", "Mul"}));
    nxrt::Session s(env, out, &again);
    EXPECT_EQ(Count("compile") - compiles, 2u);
    EXPECT_EQ(s.assignment_report().subgraphs[0].kind, "fused");
    ExpectSame(RunSession(s, names, {&a, &b, &c}), want);
    return;
  }
  EXPECT_EQ(saved, 1u);
  EXPECT_EQ(Count("export") - exports, 1u);
  ASSERT_EQ(ops, (std::vector<std::string>{"EPContext", "Mul"}));
  const onnx::NodeProto& context = written.graph().node(0);
  std::string source, payload;
  for (const auto& attr : context.attribute()) {
    if (attr.name() == "source") source = attr.s();
    if (attr.name() == "ep_cache_context") payload = attr.s();
  }
  EXPECT_EQ(source, Ep());
  EXPECT_EQ(payload, "add_relu:0,1");
  std::string compatibility;
  for (const auto& p : written.metadata_props())
    if (p.key() == "ep_compatibility_info." + Ep()) compatibility = p.value();
  EXPECT_EQ(compatibility, "FrozenFeatures;format=1");

  // A new env: the factory judges the payload (CheckCompatibility) and the EP loads it
  // (LoadCompiledGroup) instead of compiling.
  const nxrt::EpDevice* device = nullptr;
  const std::vector<nxrt::EpDevice> devices = env.ep_devices();
  for (const nxrt::EpDevice& d : devices)
    if (d.ep_name() == Ep()) device = &d;
  ASSERT_NE(device, nullptr);
  const size_t checks = Count("check_compat");
  EXPECT_EQ(env.model_compatibility(out, *device), NX_COMPATIBILITY_OPTIMAL);
  EXPECT_GT(Count("check_compat"), checks);
  const size_t loads = Count("load");
  nxrt::Session s(env, out, &again);
  EXPECT_EQ(Count("load") - loads, 1u);
  EXPECT_EQ(Count("compile") - compiles, 1u);  // nothing compiled again
  const nxrt::AssignmentReport r = s.assignment_report();
  ExpectAllOn(r, Ep());
  ASSERT_EQ(r.subgraphs.size(), 2u);
  EXPECT_EQ(r.subgraphs[0].kind, "fused");
  ASSERT_EQ(r.subgraphs[0].nodes.size(), 1u);
  EXPECT_EQ(r.subgraphs[0].nodes[0].op_type, "EPContext");
  const size_t fused = Count("fused_compute");
  ExpectSame(RunSession(s, names, {&a, &b, &c}), want);
  EXPECT_EQ(Count("fused_compute") - fused, 1u);
}

INSTANTIATE_TEST_SUITE_P(FrozenFeatures, FrozenFeaturesCompiled,
                         ::testing::Range(6, NXRT_FROZEN_ABI_LAST + 1), VersionName);

}  // namespace

INSTANTIATE_TEST_SUITE_P(FrozenFeatures, FrozenFeaturesV11,
                         ::testing::Range(11, NXRT_FROZEN_ABI_LAST + 1), VersionName);
INSTANTIATE_TEST_SUITE_P(FrozenFeatures, FrozenFeaturesV13,
                         ::testing::Range(13, NXRT_FROZEN_ABI_LAST + 1), VersionName);
